/**
 * The SQL of a job listing in `created_at` order (`core/list-order.ts`). PostgreSQL walks one
 * index range per state and source in the listing's order and merges them (a Merge Append of
 * LIMITed index scans), so a page reads about `limit` rows per branch whatever the table holds:
 * a scope's rows through `jobs_recent (scope, state, created_at, job_id)`, every tenant's
 * through `jobs_recent_tenants (state, created_at, job_id) WHERE tenant IS NOT NULL`, which
 * leaves out the system scope's `system:prune` rows, and the system scope's (when asked for)
 * through `jobs_recent` again. Pure functions returning query text, no I/O.
 */
import type { ListPosition } from '../../../core/list-order.ts';
import { ALL_JOB_STATES } from '../../../core/types.ts';
import { scopeBytes, SYSTEM_SCOPE_BYTES } from '../../../codec/keys.ts';
import type { ListQuery } from '../../types.ts';

/** The statement and its parameters; each row has `job_id` and `record`. */
export function listSql(
  table: string,
  query: ListQuery,
  after: ListPosition | null,
): { text: string; args: unknown[] } {
  const args: unknown[] = [query.limit + 1];
  const param = (value: unknown): string => {
    args.push(value);
    return `$${args.length}`;
  };
  const sources: string[] = [];
  if (query.scope.type !== 'any') sources.push(`scope = ${param(scopeBytes(query.scope))}`);
  else {
    sources.push('tenant IS NOT NULL');
    if (query.includeSystem) sources.push(`scope = ${param(SYSTEM_SCOPE_BYTES)}`);
  }
  const common: string[] = [];
  if (query.kindPrefix !== null) common.push(`starts_with(kind, ${param(query.kindPrefix)})`);
  const descending = query.order === 'newest_first';
  if (after !== null) {
    common.push(
      `(created_at, job_id) ${descending ? '<' : '>'} (${param(after.createdAt)}, ${param(after.jobId)}::uuid)`,
    );
  }
  const direction = descending ? 'DESC' : 'ASC';
  const order = `ORDER BY created_at ${direction}, job_id ${direction}`;
  const states = query.state === null ? ALL_JOB_STATES : [query.state];
  const branches = states.flatMap((state) =>
    sources.map(
      (source) =>
        `(SELECT job_id, record, created_at FROM ${table}.jobs
          WHERE state = ${state} AND ${[source, ...common].join(' AND ')} ${order} LIMIT $1)`,
    ),
  );
  return { text: `SELECT job_id, record FROM (${branches.join(' UNION ALL ')}) AS listed ${order} LIMIT $1`, args };
}
