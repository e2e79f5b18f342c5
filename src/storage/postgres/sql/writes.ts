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

/** The INSERT's column parameters below ($1 to $13), one array each; `values` are the records' encoded. */
export function columns(
  records: readonly JobRecord[],
  values: readonly Buffer[],
  now: Micros,
  arrays: ArrayParameters,
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
  ];
}
