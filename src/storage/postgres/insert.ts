/**
 * Enqueue: new jobs in one INSERT, on the store's connections or on an application's inside its
 * own transaction (`transactional.ts`). Idempotency is a unique index on (scope, key); a job id
 * already stored is an earlier try of the same insert. The statement is in `sql/writes.ts`.
 */
import type pg from 'pg';
import { withCreatedAt } from '../../core/drafts.ts';
import { idempotencySlot } from '../../core/scope.ts';
import { enqueue } from '../../core/transitions.ts';
import { JobState, workNotices, type JobRecord, type Micros } from '../../core/types.ts';
import { scopeOfTenant } from '../../codec/keys.ts';
import { decodeRecord } from '../../codec/value.ts';
import type { CreatedAtSequence } from '../shared.ts';
import type { ImportOutcome, InsertOutcome, JobDraft } from '../types.ts';
import { BINARY_ARRAYS, TEXT_ARRAYS } from './binary-arrays.ts';
import { named, type PgSchema } from './connection.ts';
import { noticePayload } from './notices.ts';
import { columns, encodeWrites, insertJobsText, withLog } from './sql/writes.ts';
import { supersedeHolders } from './supersede.ts';
import { joinLines, placeInLines } from './ordered-keys.ts';
import type { SupersedePlan } from '../supersede-plan.ts';

/**
 * Create jobs on a connection that is inside a transaction, the store's own
 * or an application's (transactional enqueue): the jobs exist only if that
 * transaction commits, and so does the notification that wakes the servers'
 * lease waiters. `origin` marks the notification as a store's own (its queue
 * announces its writes itself); `updated` is a job changed in the same
 * transaction, which a draft naming its idempotency key must see as changed.
 */
export async function insertJobs(
  db: Pick<pg.ClientBase, 'query'>,
  schema: PgSchema,
  drafts: readonly JobDraft[],
  now: Micros,
  context: {
    readonly origin?: string;
    readonly updated?: JobRecord;
    readonly createdAt: CreatedAtSequence;
    /** Append the jobs' `enqueued` entries to the transitions log. Default `true`. */
    readonly log?: boolean;
    /** Run the INSERT as a named statement (`named`): the store's own connections only, never an application's. */
    readonly prepare?: boolean;
    /**
     * Send its arrays in binary (`BINARY_ARRAYS`): the store's own connections only; an
     * application's client may be one that cannot. Default `false`.
     */
    readonly binaryArrays?: boolean;
  },
): Promise<InsertOutcome[]> {
  if (drafts.length === 0) return [];
  const table = schema.table;
  const updated = context.updated;
  const arrays = context.binaryArrays === true ? BINARY_ARRAYS : TEXT_ARRAYS;
  // A draft repeating an earlier draft's key in this batch shares that draft's outcome.
  const firstBySlot = new Map<string, number>();
  const sameAs: (number | null)[] = [];
  const records: JobRecord[] = [];
  for (const [i, draft] of drafts.entries()) {
    const slot = draft.idempotencyKey === null ? null : idempotencySlot(draft.tenant, draft.idempotencyKey);
    const earlier = slot === null ? undefined : firstBySlot.get(slot);
    if (earlier !== undefined) {
      sameAs.push(earlier);
      continue;
    }
    if (slot !== null) firstBySlot.set(slot, i);
    sameAs.push(null);
    records.push(enqueue(withCreatedAt(draft, context.createdAt.next(now)), now));
  }
  // Latest wins: replace the keys' holders first, in this transaction (the caller's).
  let plan: SupersedePlan | null = null;
  if (drafts.some((d) => d.supersedeKey !== undefined && d.supersedeKey !== null)) {
    let r = 0;
    const aligned = sameAs.map((earlier) => (earlier === null ? (records[r++] as JobRecord) : null));
    plan = await supersedeHolders(db, table, drafts, aligned, now, { log: context.log !== false, arrays });
    records.splice(0, records.length, ...aligned.filter((record): record is JobRecord => record !== null));
  }
  // Ordered keys: each keyed job joins its line, waiting when the line holds a job (locked first).
  const ordered = records.some((r) => r.orderKey !== null);
  if (ordered) await placeInLines(db, table, records);
  // The notification rides on the same statement (PostgreSQL delivers one per transaction for
  // identical payloads) and only when it commits; it names the drafts, so an idempotent repeat
  // costs a waiter one look. Any unique conflict skips the row: an idempotency key held, or
  // the job id itself, which exists only when this insert runs again after its answer was lost.
  // The log rows ride on it too, for the rows it inserted (`withLog`).
  const encoded = encodeWrites(records, context.log !== false);
  const statement = withLog(
    table,
    insertJobsText(table),
    [
      ...columns(records, encoded.values, now, arrays),
      schema.channel,
      noticePayload(context.origin ?? '', workNotices(drafts, now)),
    ],
    encoded.entries,
    arrays,
  );
  const inserted = await db.query<{ job_id: string }>(
    named(context.prepare ?? false, statement.text, statement.values),
  );
  const created = new Set(inserted.rows.map((r) => r.job_id));
  if (ordered) await joinLines(db, table, records, created);
  // Rows not inserted: keys another job already holds (possibly committed by another server a
  // moment ago), or jobs an earlier try of this same insert created. Job ids are fresh UUIDs,
  // so a row with a draft's own id is that draft's job: created by this call, not a holder.
  const refused = records.filter((r) => !created.has(r.jobId));
  const refusedIds = new Set(refused.map((r) => r.jobId));
  const holders = new Map<string, JobRecord>();
  const createdBefore = new Map<string, JobRecord>();
  if (refused.length > 0) {
    const existing = await db.query<{
      job_id: string;
      tenant: string | null;
      idempotency_key: string | null;
      record: Buffer;
    }>(
      `SELECT j.job_id, j.tenant, j.idempotency_key, j.record FROM ${table}.jobs j
       JOIN unnest($1::bytea[], $2::text[]) AS k(scope, idempotency_key)
         ON j.scope = k.scope AND j.idempotency_key = k.idempotency_key
       UNION ALL
       SELECT job_id, tenant, idempotency_key, record FROM ${table}.jobs WHERE job_id = ANY($3::uuid[])`,
      [refused.map((r) => scopeOfTenant(r.tenant)), refused.map((r) => r.idempotencyKey), [...refusedIds]],
    );
    for (const row of existing.rows) {
      const record = row.job_id === updated?.jobId ? updated : decodeRecord(row.record, `job ${row.job_id}`);
      if (refusedIds.has(row.job_id)) createdBefore.set(row.job_id, record);
      else if (row.idempotency_key !== null) holders.set(idempotencySlot(row.tenant, row.idempotency_key), record);
    }
  }
  const outcomes: InsertOutcome[] = [];
  let r = 0;
  for (const earlier of sameAs) {
    if (earlier !== null) {
      const first = outcomes[earlier];
      if (first === undefined) throw new Error('a repeated idempotency key precedes its first use');
      outcomes.push({ record: first.record, created: false });
      continue;
    }
    const record = records[r++] as JobRecord;
    if (created.has(record.jobId)) {
      const superseded = plan?.replaced.get(record.jobId);
      outcomes.push(superseded === undefined ? { record, created: true } : { record, created: true, superseded });
      continue;
    }
    const mine = createdBefore.get(record.jobId);
    if (mine !== undefined) {
      outcomes.push({ record: mine, created: true });
      continue;
    }
    const holder = holders.get(idempotencySlot(record.tenant, record.idempotencyKey ?? ''));
    if (holder === undefined)
      throw new Error(`idempotency key ${record.idempotencyKey ?? ''} conflicted but its job is gone`);
    outcomes.push({ record: holder, created: false });
  }
  return outcomes;
}

/**
 * `JobStore.importJobs`: `records` as they are, in the enqueue's INSERT (one statement, so all
 * or none), without transitions log rows. A unique conflict (the job id, or its scope's
 * idempotency key, held already) skips the row. Not retried: a lost answer's retry would
 * count the rows it wrote as skipped.
 */
export async function importJobs(
  db: Pick<pg.ClientBase, 'query'>,
  schema: PgSchema,
  records: readonly JobRecord[],
  now: Micros,
  context: { readonly origin: string; readonly createdAt: CreatedAtSequence },
): Promise<ImportOutcome> {
  if (records.length === 0) return { written: 0, skipped: 0 };
  const { values } = encodeWrites(records, false);
  const pending = records.filter((r) => r.state === JobState.Pending);
  const inserted = await db.query<{ job_id: string }>(insertJobsText(schema.table), [
    ...columns(records, values, now, BINARY_ARRAYS, false),
    schema.channel,
    noticePayload(context.origin, workNotices(pending, now)),
  ]);
  for (const record of records) context.createdAt.observe(record.createdAt);
  return { written: inserted.rows.length, skipped: records.length - inserted.rows.length };
}
