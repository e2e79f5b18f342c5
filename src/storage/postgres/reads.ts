/**
 * What the store answers without changing a job, and the pruner's DELETE: the reaper's expired
 * leases, lists, counts, the next gate to fall due, the table's size. Each is one statement on the
 * pool, run again on another connection when its own fails (`StoreContext.query`).
 */
import { laneTokenDue } from '../../core/kind-limits.ts';
import type { JobState, JobRecord, Micros, ScopeFilter } from '../../core/types.ts';
import { pageTokenAfter, pageTokenPosition, scopeBytes } from '../../codec/keys.ts';
import { decodeRecord } from '../../codec/value.ts';
import type { CountRow, ListPage, ListQuery, PruneParams, StoreMetrics } from '../types.ts';
import type { StoreContext } from './connection.ts';
import { tenantTokenDue } from './tenant-limits.ts';
import { bucketOfRow, LIMIT_COLUMNS, limitOfRow, type LimitRow } from './sql/controls.ts';
import { listSql } from './sql/list.ts';

/** The store's reads of jobs. */
export class Reads {
  private readonly t: string;

  constructor(private readonly ctx: StoreContext) {
    this.t = ctx.t;
  }

  async expiredLeases(now: Micros, limit: number): Promise<string[]> {
    const { rows } = await this.ctx.query<{ job_id: string }>(
      `SELECT job_id FROM ${this.t}.jobs WHERE state = 1 AND lease_deadline <= $1
       ORDER BY lease_deadline, job_id LIMIT $2`,
      [now, limit],
    );
    return rows.map((r) => r.job_id);
  }

  async leased(scope: ScopeFilter, workerId: string | null, limit: number): Promise<JobRecord[]> {
    const args: unknown[] = [limit];
    let where = 'state = 1';
    if (scope.type !== 'any') {
      args.push(scopeBytes(scope));
      where += ` AND scope = $${args.length}`;
    }
    if (workerId !== null) {
      args.push(workerId);
      where += ` AND worker_id = $${args.length}`;
    }
    const { rows } = await this.ctx.query<{ job_id: string; record: Buffer }>(
      `SELECT job_id, record FROM ${this.t}.jobs WHERE ${where} ORDER BY scope, priority, created_at, job_id LIMIT $1`,
      args,
    );
    return rows.map((r) => this.ctx.decode(r)).filter((r): r is JobRecord => r !== null);
  }

  async prune(params: PruneParams): Promise<number> {
    const { rowCount } = await this.ctx.query(
      `DELETE FROM ${this.t}.jobs WHERE job_id IN (
         SELECT job_id FROM ${this.t}.jobs WHERE state = $1 AND finished_at < $2
         ORDER BY finished_at, job_id LIMIT $3 FOR UPDATE SKIP LOCKED)`,
      [params.state, params.finishedBefore, params.limit],
    );
    return rowCount ?? 0;
  }

  async get(jobId: string): Promise<JobRecord | null> {
    const { rows } = await this.ctx.query<{ job_id: string; record: Buffer }>(
      `SELECT job_id, record FROM ${this.t}.jobs WHERE job_id = $1`,
      [jobId],
    );
    const row = rows[0];
    return row === undefined ? null : decodeRecord(row.record, `job ${jobId}`);
  }

  async list(query: ListQuery): Promise<ListPage> {
    const after = query.pageToken === null ? null : pageTokenPosition(query.pageToken);
    const { text, args } = listSql(this.t, query, after);
    const { rows } = await this.ctx.query<{ job_id: string; record: Buffer }>(text, args);
    const more = rows.length > query.limit;
    const jobs = rows
      .slice(0, query.limit)
      .map((r) => this.ctx.decode(r))
      .filter((r): r is JobRecord => r !== null);
    const last = jobs[jobs.length - 1];
    return { jobs, nextPageToken: more && last !== undefined ? pageTokenAfter(last) : null };
  }

  async counts(scope: ScopeFilter): Promise<CountRow[]> {
    const args: unknown[] = [];
    let where = '';
    if (scope.type !== 'any') {
      args.push(scopeBytes(scope));
      where = 'WHERE scope = $1';
    }
    const { rows } = await this.ctx.query<{ state: number; kind: string; count: string }>(
      `SELECT state, kind, count(*) AS count FROM ${this.t}.jobs ${where}
       GROUP BY state, kind ORDER BY state, kind COLLATE "C"`,
      args,
    );
    return rows.map((r) => ({ state: r.state as JobState, kind: r.kind, count: Number(r.count) }));
  }

  async nextGateAt(scope: ScopeFilter, now: Micros): Promise<Micros | null> {
    const args: unknown[] = [now];
    let where = 'state = 0 AND not_before > $1';
    if (scope.type !== 'any') {
      args.push(scopeBytes(scope));
      where += ' AND scope = $2';
    }
    // One round trip unless a rate limit exists: then a second looks at the rate-limited lanes.
    const { rows } = await this.ctx.query<{ gate: string | null; rated: boolean; tenants_rated: boolean }>(
      `SELECT (SELECT min(not_before) FROM ${this.t}.jobs WHERE ${where}) AS gate,
         EXISTS (SELECT 1 FROM ${this.t}.kind_limits WHERE rate_count IS NOT NULL) AS rated,
         EXISTS (SELECT 1 FROM ${this.t}.tenant_limits WHERE rate_count IS NOT NULL) AS tenants_rated`,
      args,
    );
    const gate = rows[0]?.gate;
    let earliest = gate === null || gate === undefined ? null : Number(gate);
    if (rows[0]?.tenants_rated === true) {
      const at = await tenantTokenDue(this.ctx, scope.type === 'any' ? null : scopeBytes(scope), now);
      if (at !== null && (earliest === null || at < earliest)) earliest = at;
    }
    if (rows[0]?.rated !== true) return earliest;
    // Sooner: the next token of a rate-limited lane, not full, that holds back ready work in scope.
    // Ready includes a row whose gate is due but not yet opened (claims open due gates lazily).
    const lanes = await this.ctx.query<LimitRow & { leased: string }>(
      `SELECT ${LIMIT_COLUMNS}, (SELECT count(*) FROM ${this.t}.jobs j WHERE j.state = 1 AND j.lane = kl.kind_prefix) AS leased
       FROM ${this.t}.kind_limits kl WHERE rate_count IS NOT NULL AND EXISTS (SELECT 1 FROM ${this.t}.jobs j
         WHERE j.state = 0 AND NOT j.held AND (j.not_before IS NULL OR j.not_before <= $1)
           AND j.lane = kl.kind_prefix${scope.type === 'any' ? '' : ' AND j.scope = $2'})`,
      scope.type === 'any' ? [now] : [now, scopeBytes(scope)],
    );
    for (const row of lanes.rows) {
      const at = laneTokenDue(limitOfRow(row), Number(row.leased), bucketOfRow(row), now);
      if (at !== null && (earliest === null || at < earliest)) earliest = at;
    }
    return earliest;
  }

  /** One round trip: the table's size with indexes and TOAST, and the oldest Pending job (a scan of the Pending rows). */
  async metrics(): Promise<StoreMetrics> {
    const { rows } = await this.ctx.pool.query<{ size: string; oldest: string | null }>(
      `SELECT pg_total_relation_size('${this.t}.jobs') AS size,
              (SELECT min(created_at) FROM ${this.t}.jobs WHERE state = 0) AS oldest`,
    );
    const row = rows[0];
    return { sizeBytes: Number(row?.size ?? 0), oldestPendingAt: row?.oldest == null ? null : Number(row.oldest) };
  }
}
