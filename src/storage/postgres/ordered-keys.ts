/**
 * Ordered keys on PostgreSQL (`core/ordered-keys.ts`): a job's `order_key` column holds its key
 * while it is in its key's line (set by its enqueue, cleared when it leaves), so a line is the
 * rows of (scope, order_key) by `order_seq` (its place, given under the key's lock: the order
 * the enqueues committed in; `created_at` is each server's own sequence), through the
 * `jobs_order` partial index, and its head is the first. Every write that changes a line, on any server (an enqueue joining it, a
 * head leaving it with the next job's turn, an operator's release), first takes a
 * transaction-scoped advisory lock on the key, so they run one after another and each sees the
 * line the one before it committed: two jobs of one key never run at once across servers.
 * Claims take no such lock: a waiting job's gate (`ORDER_WAIT`) keeps it out of the ready index
 * until the write that promotes it commits.
 */
import type pg from 'pg';
import { notFound } from '../../core/errors.ts';
import {
  compareBlockedKeys,
  isWaiting,
  keyNotBlocked,
  lineBlocked,
  ORDER_WAIT,
  staysInLine,
  type BlockedKey,
} from '../../core/ordered-keys.ts';
import type { JobRecord, Micros, QueueScope, ScopeFilter } from '../../core/types.ts';
import { scopeBytes, scopeOfTenant } from '../../codec/keys.ts';
import { decodeRecord } from '../../codec/value.ts';
import { LineJoins, nextTurn } from '../order-plan.ts';

type Db = Pick<pg.ClientBase, 'query'>;

/** Whether writing `after` may take its job out of a line: such a write takes the locked path. */
export function mayLeaveLine(after: JobRecord): boolean {
  return after.orderKey !== null && !staysInLine(after);
}

/** Lock the lines of `keys` ((tenant, key) pairs) for this transaction, in one order so two writers never deadlock. */
export async function lockLines(db: Db, keys: readonly { tenant: string | null; key: string }[]): Promise<void> {
  if (keys.length === 0) return;
  await db.query(
    `SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtextextended('order:' || encode(scope, 'hex') || ':' || key, 0) AS h
       FROM unnest($1::bytea[], $2::text[]) AS k(scope, key)) s ORDER BY h`,
    [keys.map((k) => scopeOfTenant(k.tenant)), keys.map((k) => k.key)],
  );
}

/**
 * Place the new jobs among `records` that have an ordered key in their lines, inside the
 * enqueue's transaction: lock the lines, read which hold jobs, and make each job that joins a
 * line holding one wait (`LineJoins`). Replaces those records in `records`.
 */
export async function placeInLines(db: Db, table: string, records: JobRecord[]): Promise<void> {
  const keyed = records.filter((r) => r.orderKey !== null);
  if (keyed.length === 0) return;
  const keys = keyed.map((r) => ({ tenant: r.tenant, key: r.orderKey as string }));
  await lockLines(db, keys);
  const { rows } = await db.query<{ scope: Buffer; key: string }>(
    `SELECT DISTINCT k.scope, k.key FROM unnest($1::bytea[], $2::text[]) AS k(scope, key)
       WHERE EXISTS (SELECT 1 FROM ${table}.jobs j WHERE j.scope = k.scope AND j.order_key = k.key)`,
    [keys.map((k) => scopeOfTenant(k.tenant)), keys.map((k) => k.key)],
  );
  const occupied = new Set(rows.map((r) => `${r.scope.toString('hex')}:${r.key}`));
  const joins = new LineJoins((tenant, key) => occupied.has(`${scopeOfTenant(tenant).toString('hex')}:${key}`));
  for (const [i, record] of records.entries()) records[i] = joins.place(record);
}

/**
 * After the INSERT: the jobs of `records` it created that have a key join their lines, each
 * given the next place (`order_seq`) of its line, in call order; the line is locked.
 */
export async function joinLines(
  db: Db,
  table: string,
  records: readonly Pick<JobRecord, 'jobId' | 'tenant' | 'orderKey'>[],
  created: ReadonlySet<string>,
): Promise<void> {
  const joined = records.filter((r) => r.orderKey !== null && created.has(r.jobId));
  if (joined.length === 0) return;
  const seen = new Map<string, number>();
  const places = joined.map((r) => {
    const slot = `${r.tenant ?? ''}\u0000${r.orderKey ?? ''}`;
    const place = (seen.get(slot) ?? 0) + 1;
    seen.set(slot, place);
    return place;
  });
  await db.query(
    `UPDATE ${table}.jobs j SET order_key = u.key,
         order_seq = coalesce((SELECT max(x.order_seq) FROM ${table}.jobs x WHERE x.scope = j.scope AND x.order_key = u.key), 0) + u.place
       FROM unnest($1::uuid[], $2::text[], $3::bigint[]) AS u(job_id, key, place)
       WHERE j.job_id = u.job_id`,
    [joined.map((r) => r.jobId), joined.map((r) => r.orderKey), places],
  );
}

/**
 * Inside the transaction that wrote `after` (its line locked first, `lockLines`): if the job was
 * in its line and has left it, clear its place and return the next job's turn, for the caller to
 * write in the same transaction (`null`: none).
 */
export async function leaveLine(db: Db, table: string, after: JobRecord, now: Micros): Promise<JobRecord | null> {
  if (!mayLeaveLine(after)) return null;
  // Taken already when the caller knew the key before locking the row; re-entrant, so taken here anyway.
  await lockLines(db, [{ tenant: after.tenant, key: after.orderKey as string }]);
  const { rowCount } = await db.query(
    `UPDATE ${table}.jobs SET order_key = NULL WHERE job_id = $1 AND order_key IS NOT NULL`,
    [after.jobId],
  );
  if (rowCount === 0) return null;
  const first = await firstOfLine(db, table, after.tenant, after.orderKey as string);
  return nextTurn(first, after.jobId, now);
}

async function firstOfLine(db: Db, table: string, tenant: string | null, key: string): Promise<JobRecord | null> {
  const { rows } = await db.query<{ job_id: string; record: Buffer }>(
    `SELECT job_id, record FROM ${table}.jobs WHERE scope = $1 AND order_key = $2
       ORDER BY order_seq LIMIT 1 FOR UPDATE`,
    [scopeOfTenant(tenant), key],
  );
  const row = rows[0];
  return row === undefined ? null : decodeRecord(row.record, `job ${row.job_id}`);
}

/**
 * `JobStore.releaseKey` inside a transaction: lock the line, check it is blocked, let its Dead
 * head go (its place cleared, the job unchanged) and return the next job's turn for the caller
 * to write. A line whose head was pruned starts with a waiting job: that job's turn is the release.
 */
export async function releaseLine(
  db: Db,
  table: string,
  scope: QueueScope,
  key: string,
  now: Micros,
): Promise<JobRecord | null> {
  const tenant = scope.type === 'tenant' ? scope.tenant : null;
  await lockLines(db, [{ tenant, key }]);
  const head = await firstOfLine(db, table, tenant, key);
  if (head === null) throw notFound(`order key ${key}`);
  if (!lineBlocked(head)) throw keyNotBlocked(key);
  if (isWaiting(head)) return nextTurn(head, null, now);
  await db.query(`UPDATE ${table}.jobs SET order_key = NULL WHERE job_id = $1`, [head.jobId]);
  return nextTurn(await firstOfLine(db, table, tenant, key), head.jobId, now);
}

/** `JobStore.blockedKeys`: every line's first job and waiting count, the blocked ones kept. */
export async function blockedLines(db: Db, table: string, filter: ScopeFilter, limit: number): Promise<BlockedKey[]> {
  const values: unknown[] = [ORDER_WAIT];
  let where = 'order_key IS NOT NULL';
  if (filter.type !== 'any') {
    values.push(scopeBytes(filter));
    where += ' AND scope = $2';
  }
  const { rows } = await db.query<{
    job_id: string;
    tenant: string | null;
    key: string;
    record: Buffer;
    waiting: string;
  }>(
    `SELECT job_id, tenant, key, record, waiting FROM (
       SELECT job_id, tenant, order_key AS key, record,
         row_number() OVER (PARTITION BY scope, order_key ORDER BY order_seq) AS n,
         count(*) FILTER (WHERE state = 0 AND not_before = $1) OVER (PARTITION BY scope, order_key) AS waiting
       FROM ${table}.jobs WHERE ${where}) l
     WHERE n = 1`,
    values,
  );
  const blocked: BlockedKey[] = [];
  for (const row of rows) {
    const head = decodeRecord(row.record, `job ${row.job_id}`);
    if (!lineBlocked(head)) continue;
    blocked.push({
      tenant: row.tenant,
      orderKey: row.key,
      head: isWaiting(head) ? null : head,
      waiting: Number(row.waiting),
    });
  }
  return blocked.sort(compareBlockedKeys).slice(0, limit);
}
