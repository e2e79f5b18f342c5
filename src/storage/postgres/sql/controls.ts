/**
 * The SQL of pauses and kind limits that every write and claim carries: whether a pause holds a
 * row (`held`), which lane a row is in (`lane`), the locks that keep both exact, and the rows of
 * `kind_limits` as the queue's limits. Pure functions returning query text, no I/O.
 */
import { SYSTEM_KIND_PREFIX } from '../../../core/bounds.ts';
import type { KindLimit, TokenBucket } from '../../../core/kind-limits.ts';
import type { Rate } from '../../../core/rate.ts';

/**
 * Whether a pause holds back a job of `scope` and `kind` (SQL expressions over the row being
 * written): a row of `kind_pauses` for its scope or everywhere whose prefix covers its kind, a
 * `system:` kind only by a `system:` prefix (`pauseCoversKind`). The uncorrelated EXISTS runs
 * once per statement, so while nothing is paused a write does not probe `kind_pauses` per row.
 */
export function pausedSql(table: string, scope: string, kind: string): string {
  return `(EXISTS (SELECT 1 FROM ${table}.kind_pauses) AND EXISTS (SELECT 1 FROM ${table}.kind_pauses kp
      WHERE (kp.scope IS NULL OR kp.scope = ${scope}) AND starts_with(${kind}, kp.kind_prefix)
      AND (starts_with(kp.kind_prefix, '${SYSTEM_KIND_PREFIX}') OR NOT starts_with(${kind}, '${SYSTEM_KIND_PREFIX}'))))`;
}

/** Rows of the jobs table a pause of scope `scope` (bytes, NULL: everywhere) and prefix `prefix` covers (SQL parameters). */
export function pauseCovers(scope: string, prefix: string): string {
  return `(${scope}::bytea IS NULL OR scope = ${scope}::bytea) AND starts_with(kind, ${prefix}::text)
    AND (starts_with(${prefix}::text, '${SYSTEM_KIND_PREFIX}') OR NOT starts_with(kind, '${SYSTEM_KIND_PREFIX}'))`;
}

/**
 * The lane of a job of `kind` (an SQL expression): the longest prefix of `kind_limits` that
 * covers it, a `system:` kind only by a `system:` prefix (`limitLane`), or NULL. The covering
 * prefixes are all prefixes of the kind, so the longest is the one. The uncorrelated EXISTS
 * runs once per statement: without limits a write does not probe `kind_limits` per row.
 */
export function laneSql(table: string, kind: string): string {
  return `CASE WHEN EXISTS (SELECT 1 FROM ${table}.kind_limits) THEN (SELECT kl.kind_prefix FROM ${table}.kind_limits kl
      WHERE starts_with(${kind}, kl.kind_prefix)
      AND (starts_with(kl.kind_prefix, '${SYSTEM_KIND_PREFIX}') OR NOT starts_with(${kind}, '${SYSTEM_KIND_PREFIX}'))
      ORDER BY length(kl.kind_prefix) DESC LIMIT 1) END`;
}

/**
 * The lock half of the `held` and `lane` protocol, as a condition that reads no row (always true). A statement that
 * makes rows Pending names `kind_pauses` and `kind_limits` FOR KEY SHARE, so it takes ROW SHARE
 * on both while it is parsed, before its snapshot is taken; pause and resume, and setting or
 * clearing a limit, hold EXCLUSIVE on their table until they commit. A write that waited for
 * one therefore sees it, and one waits for every write that started before it to commit, then
 * marks that write's rows too: `held` and `lane` are exact.
 */
export function writeLocks(table: string): string {
  return `NOT EXISTS (SELECT FROM ${table}.kind_pauses WHERE false FOR KEY SHARE)
    AND NOT EXISTS (SELECT FROM ${table}.kind_limits WHERE false FOR KEY SHARE)`;
}

/** A row of `kind_limits`: the limit, and its lane's token bucket (`tokens` NULL: full). */
export interface LimitRow {
  readonly kind_prefix: string;
  readonly concurrency: number | null;
  readonly rate_count: string | null;
  readonly rate_period_ms: string | null;
  readonly set_at: string;
  readonly set_by: string;
  readonly tokens: number | null;
  readonly refilled_at: string | null;
}

export const LIMIT_COLUMNS =
  'kind_prefix, concurrency, rate_count, rate_period_ms, set_at, set_by, tokens, refilled_at';

export function limitOfRow(row: LimitRow): KindLimit {
  return {
    kindPrefix: row.kind_prefix,
    concurrency: row.concurrency,
    rate: rateOfRow(row),
    setAt: Number(row.set_at),
    by: row.set_by,
  };
}

/** A limit row's rate (kind or tenant limit): `null` without one. */
export function rateOfRow(row: Pick<LimitRow, 'rate_count' | 'rate_period_ms'>): Rate | null {
  return row.rate_count === null || row.rate_period_ms === null
    ? null
    : { count: Number(row.rate_count), periodMs: Number(row.rate_period_ms) };
}

/** A limit row's token bucket (kind or tenant limit): `null` is full. */
export function bucketOfRow(row: Pick<LimitRow, 'tokens' | 'refilled_at'>): TokenBucket | null {
  return row.tokens === null || row.refilled_at === null
    ? null
    : { tokens: row.tokens, refilledAt: Number(row.refilled_at) };
}
