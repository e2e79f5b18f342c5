/**
 * The claim's statements: the gate opening that starts every claim, the key-order scan, the fair
 * claim's rounds, and both again when kind limits exist. Pure functions returning query text and
 * values, no I/O; the planner's choices for them are checked by tests (`paused-index.test.ts`).
 */
import { SYSTEM_KIND_PREFIX } from '../../../core/bounds.ts';
import { leasesSystemKinds } from '../../../core/transitions.ts';
import type { ScopeFilter } from '../../../core/types.ts';
import { scopeBytes, SYSTEM_SCOPE_BYTES } from '../../../codec/keys.ts';
import { unseenArray } from './unseen-array.ts';

/** Due gates opened per claim; more wait for the next claim. */
const OPEN_GATES_BATCH = 1_000;

/**
 * The claim's gate opening and its read of the limits, in one statement (`$1` is now): a
 * data-modifying WITH runs to completion whether or not the query reads it. A row whose
 * `kind_prefix` is NULL says tenant limits exist.
 */
export function claimGatesQuery(t: string): string {
  return `WITH opened AS (UPDATE ${t}.jobs SET not_before = NULL WHERE job_id IN (
        SELECT job_id FROM ${t}.jobs WHERE state = 0 AND not_before <= $1::bigint
        ORDER BY not_before LIMIT ${OPEN_GATES_BATCH} FOR UPDATE SKIP LOCKED))
      SELECT kind_prefix FROM ${t}.kind_limits
      UNION ALL SELECT NULL WHERE EXISTS (SELECT 1 FROM ${t}.tenant_limits)`;
}

/** What a claim reads of each row it locks. */
export interface ClaimRow {
  readonly job_id: string;
  readonly record: Buffer;
}

/** A row of the fair claim: its tenant's turn order (`ord`) and scope too. */
export type FairRow = ClaimRow & { readonly ord: string; readonly scope: Buffer };

/**
 * The claim's scan: Pending rows with an open gate, in key order, through the
 * `jobs_ready` partial index, skipping rows another transaction holds.
 * `$1` is the limit; the scope and kind prefixes follow. Exported so a test
 * can check the plan.
 *
 * The kind filter is `leaseKindMatches` in SQL: a `system:` kind only for a
 * prefix that itself starts with `system:`. When no prefix does, the scan
 * also starts past the system scope (`scope > 32 zero bytes`: system kinds
 * live there and only there, and it sorts before every tenant), so a
 * catch-all claim on every scope reads no system row on its way to the first
 * tenant job.
 */
export function claimQuery(
  table: string,
  scope: ScopeFilter,
  kinds: readonly string[] | null,
): { text: string; values: unknown[] } {
  const filter = claimFilter(scope, kinds, 2);
  return {
    text: `SELECT job_id, record FROM ${table}.jobs WHERE ${ready()} AND lane IS NULL AND ${filter.where}
           ORDER BY scope, priority, created_at, job_id LIMIT $1 FOR UPDATE SKIP LOCKED`,
    values: filter.values,
  };
}

/** Ready: Pending, its gate open, no pause holding it. Both ready indexes are over this. */
function ready(alias = ''): string {
  const a = alias === '' ? '' : `${alias}.`;
  return `${a}state = 0 AND ${a}not_before IS NULL AND NOT ${a}held`;
}

/**
 * The claim's scope and kind filter (`leaseKindMatches` in SQL), its parameters numbered from
 * `$first`.
 */
function claimFilter(
  scope: ScopeFilter,
  kinds: readonly string[] | null,
  first: number,
): { where: string; values: unknown[] } {
  const values: unknown[] = [];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${first + values.length - 1}`;
  };
  let where = 'true';
  if (scope.type !== 'any') where += ` AND scope = ${param(scopeBytes(scope))}`;
  const system = param(SYSTEM_KIND_PREFIX);
  if (!leasesSystemKinds(kinds)) {
    where += ` AND scope > ${param(SYSTEM_SCOPE_BYTES)} AND NOT starts_with(kind, ${system})`;
  }
  if (kinds !== null) {
    where += ` AND EXISTS (SELECT 1 FROM unnest(${param(kinds)}::text[]) AS p
      WHERE starts_with(kind, p) AND (starts_with(p, ${system}) OR NOT starts_with(kind, ${system})))`;
  }
  return { where, values };
}

/**
 * The claim's scan when limits exist, in key order: the first `$1` unlimited ready rows through
 * `jobs_ready`, and of each lane in `$2` the first `$3` (its room at most) through `jobs_lanes`; a
 * lane without room is not read at all. Rows come merged in key order, at most `$1`, locked.
 */
export function laneClaimQuery(
  table: string,
  scope: ScopeFilter,
  kinds: readonly string[] | null,
): { text: string; values: unknown[] } {
  const filter = claimFilter(scope, kinds, 4);
  return {
    text: `WITH free AS (
        SELECT job_id, record, scope, priority, created_at FROM ${table}.jobs
        WHERE ${ready()} AND lane IS NULL AND ${filter.where}
        ORDER BY scope, priority, created_at, job_id LIMIT $1 FOR UPDATE SKIP LOCKED
      ),
      laned AS (
        SELECT c.* FROM unnest($2::text[], $3::bigint[]) AS l(lane, room) CROSS JOIN LATERAL (
          SELECT job_id, record, scope, priority, created_at FROM ${table}.jobs
          WHERE ${ready()} AND lane = l.lane AND ${filter.where}
          ORDER BY scope, priority, created_at, job_id LIMIT l.room FOR UPDATE SKIP LOCKED
        ) c WHERE l.room > 0
      )
      SELECT job_id, record FROM (SELECT * FROM free UNION ALL SELECT * FROM laned) u
      ORDER BY scope, priority, created_at, job_id LIMIT $1`,
    values: filter.values,
  };
}

/**
 * The fair claim's candidates when limits exist: every tenant with ready work that is unlimited
 * or in a lane of `$2` with room (`$3`), found by a loose index scan (per tenant, one probe of
 * `jobs_ready` and one of `jobs_lanes` per lane with room), and of each tenant the first `$1`
 * unlimited rows and the first `$3` of each such lane, locked, with their scope. The fair order
 * and the claim rule are applied to them by `fairPick`. A lane without room is not read.
 */
export function fairLaneClaimQuery(
  table: string,
  kinds: readonly string[] | null,
): { text: string; values: unknown[] } {
  const values: unknown[] = [SYSTEM_SCOPE_BYTES];
  if (kinds !== null) values.push(kinds);
  const kindFilter =
    kinds === null ? '' : ` AND EXISTS (SELECT 1 FROM unnest($5::text[]) AS p WHERE starts_with(j.kind, p))`;
  const next = (after: string): string => `(SELECT x.scope FROM (
      (SELECT j.scope FROM ${table}.jobs j WHERE ${ready('j')} AND j.lane IS NULL AND j.scope > ${after}${kindFilter}
        ORDER BY j.scope LIMIT 1)
      UNION ALL
      SELECT y.scope FROM lanes l CROSS JOIN LATERAL (SELECT j.scope FROM ${table}.jobs j
        WHERE ${ready('j')} AND j.lane = l.lane AND j.scope > ${after}${kindFilter} ORDER BY j.scope LIMIT 1) y
    ) x ORDER BY x.scope LIMIT 1)`;
  return {
    text: `WITH RECURSIVE lanes AS (
        SELECT lane, room FROM unnest(${unseenArray('$2::text[]')}, $3::bigint[]) AS l(lane, room) WHERE room > 0
      ),
      tenants(scope) AS (
        SELECT ${next('$4::bytea')}
        UNION ALL
        SELECT ${next('t.scope')} FROM tenants t WHERE t.scope IS NOT NULL
      )
      SELECT c.job_id, c.record, c.scope FROM tenants t CROSS JOIN LATERAL (
        SELECT * FROM (SELECT j.job_id, j.record, j.scope FROM ${table}.jobs j
          WHERE ${ready('j')} AND j.lane IS NULL AND j.scope = t.scope${kindFilter}
          ORDER BY j.priority, j.created_at, j.job_id LIMIT $1 FOR UPDATE SKIP LOCKED) free
        UNION ALL
        SELECT y.* FROM lanes l CROSS JOIN LATERAL (SELECT j.job_id, j.record, j.scope FROM ${table}.jobs j
          WHERE ${ready('j')} AND j.lane = l.lane AND j.scope = t.scope${kindFilter}
          ORDER BY j.priority, j.created_at, j.job_id LIMIT l.room FOR UPDATE SKIP LOCKED) y
      ) c WHERE t.scope IS NOT NULL`,
    values,
  };
}

/** A ready job of a wanted kind, in a tenant scope (which holds no system kinds), not taken yet by this claim. */
function fairReady(alias: string, kinds: readonly string[] | null, kindsParam: string, takenParam: string): string {
  const kindFilter =
    kinds === null
      ? ''
      : ` AND EXISTS (SELECT 1 FROM unnest(${kindsParam}::text[]) AS p WHERE starts_with(${alias}.kind, p))`;
  // Rows this claim's earlier rounds took are still Pending, and its own locks do not skip them.
  return `${alias}.state = 0 AND ${alias}.not_before IS NULL AND NOT ${alias}.held AND ${alias}.lane IS NULL
    AND ${alias}.job_id <> ALL(${takenParam}::uuid[])${kindFilter}`;
}

/**
 * One round of the fair claim, in one statement. The tenants: the next ones after `cursor` with
 * ready work of a wanted kind, then (wrapping around) the ones from the first up to the cursor,
 * `k` at most, found by a loose index scan of `jobs_ready` (one probe per tenant, whatever each
 * holds). The jobs: the first `ceil(k / tenants)` ready jobs of each, locked, returned by tenant
 * (`ord`, 1-based, in the order they take turns), each tenant's in key order.
 */
export function fairClaimQuery(
  table: string,
  kinds: readonly string[] | null,
  cursor: Buffer | null,
  k: number,
  taken: readonly string[],
): { text: string; values: unknown[] } {
  const values: unknown[] = [cursor ?? SYSTEM_SCOPE_BYTES, cursor, k, taken, SYSTEM_SCOPE_BYTES];
  if (kinds !== null) values.push(kinds);
  const ready = fairReady('j', kinds, '$6', '$4');
  const next = (bound: string): string =>
    `(SELECT j.scope FROM ${table}.jobs j WHERE ${ready} AND j.scope > t.scope${bound} ORDER BY j.scope LIMIT 1)`;
  return {
    text: `WITH RECURSIVE
      after_cursor(scope, n) AS (
        (SELECT j.scope, 1 FROM ${table}.jobs j WHERE ${ready} AND j.scope > $1::bytea ORDER BY j.scope LIMIT 1)
        UNION ALL
        SELECT ${next('')}, t.n + 1 FROM after_cursor t WHERE t.scope IS NOT NULL AND t.n < $3
      ),
      found_after AS (SELECT count(*) AS n FROM after_cursor WHERE scope IS NOT NULL),
      up_to_cursor(scope, n) AS (
        (SELECT j.scope, 1 FROM ${table}.jobs j
          WHERE $2::bytea IS NOT NULL AND (SELECT n FROM found_after) < $3
            AND ${ready} AND j.scope > $5::bytea AND j.scope <= $2::bytea ORDER BY j.scope LIMIT 1)
        UNION ALL
        SELECT ${next(' AND j.scope <= $2::bytea')}, t.n + 1 FROM up_to_cursor t
          WHERE t.scope IS NOT NULL AND t.n + (SELECT n FROM found_after) < $3
      ),
      tenants AS (
        SELECT scope, n AS ord FROM after_cursor WHERE scope IS NOT NULL
        UNION ALL
        SELECT scope, n + (SELECT n FROM found_after) FROM up_to_cursor WHERE scope IS NOT NULL
      )
      SELECT c.job_id, c.record, t.ord, t.scope FROM tenants t CROSS JOIN LATERAL (
        SELECT j.job_id, j.record, j.priority, j.created_at FROM ${table}.jobs j
        WHERE ${ready} AND j.scope = t.scope
        ORDER BY j.priority, j.created_at, j.job_id
        LIMIT (SELECT ceil($3::numeric / count(*))::int FROM tenants) FOR UPDATE SKIP LOCKED
      ) c ORDER BY t.ord, c.priority, c.created_at, c.job_id`,
    values,
  };
}
