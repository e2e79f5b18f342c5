/**
 * What the store's writes send: the `not_before` column, each record's stored value and its
 * transitions log row, the INSERT's column arrays, and the log rows riding on a write's
 * statement. Pure functions, no I/O.
 */
import { transitionOf } from '../../../core/transitions-log.ts';
import { finishedAt, JobState, type JobRecord, type Micros } from '../../../core/types.ts';
import { scopeOfTenant } from '../../../codec/keys.ts';
import { encodeWrite } from '../../../codec/value.ts';
import type { ArrayParameters } from '../binary-arrays.ts';
import { laneSql, pausedSql, writeLocks } from './controls.ts';
import { unseenArray } from './unseen-array.ts';

/** The `not_before` column: the gate while it is still closed at `now`, else NULL (ready, or not Pending). */
export function closedGate(record: JobRecord, now: Micros): Micros | null {
  return record.state === JobState.Pending && record.notBefore !== null && record.notBefore > now
    ? record.notBefore
    : null;
}

/**
 * `statement`, a data-modifying statement `RETURNING job_id, scope, kind` (numbered parameters
 * `values`), with the transitions log rows `entries` appended in the same statement, for the
 * rows it wrote only: one multi-row INSERT whatever their number. Only the entries and their
 * times travel again; the rest comes from the rows written. Unchanged when no write is logged.
 */
export function withLog(
  table: string,
  statement: string,
  values: unknown[],
  entries: readonly LogRow[],
  arrays: ArrayParameters,
): { text: string; values: unknown[] } {
  if (entries.length === 0) return { text: statement, values };
  const n = values.length;
  return {
    text: `WITH w AS (${statement}),
      l AS (INSERT INTO ${table}.job_transitions (job_id, at, scope, kind, entry)
        SELECT w.job_id, e.at, w.scope, w.kind, e.entry
        FROM unnest($${n + 1}::uuid[], $${n + 2}::bigint[], $${n + 3}::bytea[]) WITH ORDINALITY AS e(job_id, at, entry, ord)
        JOIN w ON w.job_id = e.job_id ORDER BY e.ord)
      SELECT job_id FROM w`,
    values: [
      ...values,
      arrays.uuid(entries.map((e) => e.jobId)),
      arrays.int8(entries.map((e) => e.at)),
      arrays.bytea(entries.map((e) => e.entry)),
    ],
  };
}

/** A transitions log row a write appends (`withLog`). */
export interface LogRow {
  readonly jobId: string;
  readonly at: Micros;
  readonly entry: Buffer;
}

/**
 * The stored value of each of `records`, and the log rows of those whose write appends one
 * (`log`: the store keeps the log), through `encodeWrite`.
 */
export function encodeWrites(records: readonly JobRecord[], log: boolean): { values: Buffer[]; entries: LogRow[] } {
  const values: Buffer[] = [];
  const entries: LogRow[] = [];
  for (const record of records) {
    const { value, entry } = encodeWrite(record, log);
    values.push(value);
    if (entry !== null) entries.push({ jobId: record.jobId, at: transitionOf(entry.record).at, entry: entry.value });
  }
  return { values, entries };
}

/** The INSERT's column parameters below ($1 to $14), one array each; `values` are the records' encoded. */
export function columns(
  records: readonly JobRecord[],
  values: readonly Buffer[],
  now: Micros,
  arrays: ArrayParameters,
  /** Whether the rows hold their supersede keys: an enqueue's do, an import's (as exported) do not. */
  keyHolders = true,
): unknown[] {
  return [
    arrays.uuid(records.map((r) => r.jobId)),
    arrays.bytea(records.map((r) => scopeOfTenant(r.tenant))),
    arrays.text(records.map((r) => r.tenant)),
    arrays.int2(records.map((r) => r.state)),
    arrays.int2(records.map((r) => r.priority)),
    arrays.int8(records.map((r) => r.createdAt)),
    arrays.text(records.map((r) => r.kind)),
    arrays.int8(records.map((r) => closedGate(r, now))),
    arrays.int8(records.map((r) => r.leaseDeadline)),
    arrays.text(records.map((r) => r.workerId)),
    arrays.text(records.map((r) => r.idempotencyKey)),
    arrays.int8(records.map((r) => finishedAt(r))),
    arrays.bytea(values),
    // The key's holder: a job created Pending with a key (one superseded in its own call is not).
    arrays.text(records.map((r) => (keyHolders && r.state === JobState.Pending ? r.supersedeKey : null))),
  ];
}

/**
 * The UPDATE of `writeMany` (before `withLog`): new versions of jobs from `unnest` arrays ($1 to
 * $8), each row written only if its record is still `expected` (NULL: a row the transaction holds
 * locked). When some rows are made Pending (`pending`), it marks them held and laned under the
 * write locks and notifies other servers ($9 the channel, $10 the payload).
 */
export function updateJobsText(t: string, pending: boolean): string {
  // Identical notifications of one transaction are delivered once, so each Pending row may send it.
  const notify = pending ? `, CASE WHEN u.state = 0 THEN pg_notify($9, $10)::text END AS notified` : '';
  // A row made Pending is held if a pause covers it, under the pause lock; a claim's leases
  // (nothing Pending) do not touch `kind_pauses`, so pauses never wait for claims.
  const held = pending ? `u.state = 0 AND ${pausedSql(t, 'j.scope', 'j.kind')}` : 'false';
  // Its lane too; a leased row keeps the lane it was claimed in, for the lane's count.
  const lane = pending ? `, lane = CASE WHEN u.state = 0 THEN ${laneSql(t, 'j.kind')} ELSE j.lane END` : '';
  // A job that finishes lets go of its supersede key (core/supersede.ts), in the same statement.
  return `UPDATE ${t}.jobs AS j SET state = u.state,
         not_before = u.not_before, lease_deadline = u.lease_deadline, worker_id = u.worker_id,
         finished_at = u.finished_at, record = u.record, held = ${held}${lane},
         supersede_key = CASE WHEN u.state IN (0, 1) THEN j.supersede_key END
       FROM unnest($1::uuid[], $2::bytea[], $3::smallint[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[],
         $8::bytea[]) AS u(job_id, expected, state, not_before, lease_deadline, worker_id, finished_at, record)
       WHERE j.job_id = u.job_id AND (u.expected IS NULL OR j.record = u.expected)${pending ? ` AND ${writeLocks(t)}` : ''}
       RETURNING j.job_id, j.scope, j.kind${notify}`;
}

/**
 * The INSERT of `insertJobs` (before `withLog`): the column arrays of `columns` ($1 to $14), each
 * row held and laned as its pauses and limits say, under the write locks; a unique conflict skips
 * the row. Every row inserted notifies the servers ($15 the channel, $16 the payload).
 */
export function insertJobsText(table: string): string {
  return `INSERT INTO ${table}.jobs (job_id, scope, tenant, state, priority, created_at, kind, not_before,
       lease_deadline, worker_id, idempotency_key, finished_at, record, supersede_key, held, lane)
     SELECT u.*, ${pausedSql(table, 'u.scope', 'u.kind')}, ${laneSql(table, 'u.kind')}
     FROM unnest(${unseenArray('$1::uuid[]')}, $2::bytea[], $3::text[], $4::smallint[], $5::smallint[], $6::bigint[],
       $7::text[], $8::bigint[], $9::bigint[], $10::text[], $11::text[], $12::bigint[], $13::bytea[], $14::text[])
       AS u(job_id, scope, tenant, state, priority, created_at, kind, not_before, lease_deadline, worker_id,
         idempotency_key, finished_at, record, supersede_key)
     WHERE ${writeLocks(table)}
     ON CONFLICT DO NOTHING
     RETURNING job_id, scope, kind, pg_notify($15, $16) AS notified`;
}
