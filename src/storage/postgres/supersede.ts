/**
 * The supersede step of an enqueue on PostgreSQL (`core/supersede.ts`), inside the enqueue's
 * transaction: the holder of a key is the row whose `supersede_key` column names it (set only
 * while the job holds its key; a unique index keeps one holder per (scope, key)). Enqueues of
 * one key take a transaction-scoped advisory lock on it first, so across servers they run one
 * after another and each sees the holder the one before it wrote: two concurrent enqueues
 * leave exactly one Pending job.
 */
import type pg from 'pg';
import { supersedeSlot } from '../../core/supersede.ts';
import { idempotencySlot } from '../../core/scope.ts';
import { finishedAt, type JobRecord, type Micros } from '../../core/types.ts';
import { scopeOfTenant } from '../../codec/keys.ts';
import { decodeRecord } from '../../codec/value.ts';
import { planSupersede, type SupersedePlan } from '../supersede-plan.ts';
import type { JobDraft } from '../types.ts';
import type { ArrayParameters } from './binary-arrays.ts';
import { closedGate, encodeWrites, updateJobsText, withLog } from './sql/writes.ts';

/** Lock the supersede keys (`scopes[i]`, `keys[i]`) for this transaction, in one order so two writers never deadlock. */
export async function lockSupersedeKeys(
  db: Pick<pg.ClientBase, 'query'>,
  scopes: readonly Buffer[],
  keys: readonly string[],
): Promise<void> {
  await db.query(
    `SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtextextended(encode(scope, 'hex') || ':' || key, 0) AS h
       FROM unnest($1::bytea[], $2::text[]) AS k(scope, key)) s ORDER BY h`,
    [scopes, keys],
  );
}

/**
 * Lock the keys of `drafts`, read their holders, plan, and write the holders the plan changes.
 * `records[i]` is the job `drafts[i]` creates (`null`: a repeat of an earlier draft's
 * idempotency key); a draft whose idempotency key a stored job holds is a repeat too, and
 * supersedes nothing. Returns the plan; `records` then holds the jobs to insert.
 */
export async function supersedeHolders(
  db: Pick<pg.ClientBase, 'query'>,
  table: string,
  drafts: readonly JobDraft[],
  records: (JobRecord | null)[],
  now: Micros,
  options: { readonly log: boolean; readonly arrays: ArrayParameters },
): Promise<SupersedePlan> {
  const keyed = drafts.filter((d) => d.supersedeKey !== undefined && d.supersedeKey !== null);
  const scopes = keyed.map((d) => scopeOfTenant(d.tenant));
  const keys = keyed.map((d) => d.supersedeKey as string);
  await lockSupersedeKeys(db, scopes, keys);
  const idempotent = keyed.filter((d) => d.idempotencyKey !== null);
  const { rows } = await db.query<{ tenant: string | null; key: string; record: Buffer }>(
    `SELECT j.tenant, j.supersede_key AS key, j.record FROM ${table}.jobs j
       JOIN unnest($1::bytea[], $2::text[]) AS k(scope, key) ON j.scope = k.scope AND j.supersede_key = k.key
       FOR UPDATE OF j`,
    [scopes, keys],
  );
  const repeats = new Set<string>();
  if (idempotent.length > 0) {
    const found = await db.query<{ tenant: string | null; key: string }>(
      `SELECT j.tenant, j.idempotency_key AS key FROM ${table}.jobs j
         JOIN unnest($1::bytea[], $2::text[]) AS k(scope, key) ON j.scope = k.scope AND j.idempotency_key = k.key`,
      [idempotent.map((d) => scopeOfTenant(d.tenant)), idempotent.map((d) => d.idempotencyKey)],
    );
    for (const row of found.rows) repeats.add(idempotencySlot(row.tenant, row.key));
  }
  const ownIds = new Set(records.flatMap((r) => (r === null ? [] : [r.jobId])));
  const holders = new Map<string, JobRecord>();
  for (const row of rows) {
    const record = decodeRecord(row.record, `job ${row.key}`);
    // A job of this very call: an earlier try of it committed. It is the holder; nothing to replace.
    if (!ownIds.has(record.jobId)) holders.set(supersedeSlot(row.tenant, row.key), record);
  }
  const planned = records.map((record, i) => {
    const draft = drafts[i];
    if (record === null || draft === undefined || draft.idempotencyKey === null) return record;
    return repeats.has(idempotencySlot(draft.tenant, draft.idempotencyKey)) ? null : record;
  });
  const plan = planSupersede(
    drafts,
    planned,
    (draft) => holders.get(supersedeSlot(draft.tenant, draft.supersedeKey)) ?? null,
    now,
  );
  for (const [i, record] of planned.entries()) if (record !== null) records[i] = record;
  if (plan.cancelled.length > 0) {
    const encoded = encodeWrites(plan.cancelled, options.log);
    const { arrays } = options;
    const statement = withLog(
      table,
      updateJobsText(table, false),
      [
        arrays.uuid(plan.cancelled.map((r) => r.jobId)),
        arrays.bytea(plan.cancelled.map(() => null)),
        arrays.int2(plan.cancelled.map((r) => r.state)),
        arrays.int8(plan.cancelled.map((r) => closedGate(r, now))),
        arrays.int8(plan.cancelled.map((r) => r.leaseDeadline)),
        arrays.text(plan.cancelled.map((r) => r.workerId)),
        arrays.int8(plan.cancelled.map((r) => finishedAt(r))),
        arrays.bytea(encoded.values),
      ],
      encoded.entries,
      arrays,
    );
    await db.query(statement.text, statement.values);
  }
  if (plan.passed.length > 0) {
    await db.query(`UPDATE ${table}.jobs SET supersede_key = NULL WHERE job_id = ANY($1::uuid[])`, [
      plan.passed.map((r) => r.jobId),
    ]);
  }
  return plan;
}
