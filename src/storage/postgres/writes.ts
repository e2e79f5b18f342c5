/**
 * Changes to jobs: enqueue (`insertJobs`, one INSERT), a fenced update of one job, a worker's
 * batch of results, and the one UPDATE every write ends in (`writeMany`). A fenced update applies
 * the core transition to the row as read (or as this store leased it) and writes it back only if
 * the stored record is still that one (compare-and-set on the whole record), or, when it creates
 * jobs too, under a row lock in one transaction; either way a stale submission through any
 * server is rejected. A write whose answer was lost is settled by the rows (`casWrite`).
 */
import type pg from 'pg';
import { notFound } from '../../core/errors.ts';
import {
  finishedAt,
  itemFailed,
  itemOk,
  JobState,
  workNotices,
  type ItemResult,
  type JobRecord,
  type Micros,
  type QueueScope,
} from '../../core/types.ts';
import { decodeRecord, encodeRecord } from '../../codec/value.ts';
import type { Change, InsertOutcome, JobDraft, UpdateItem, UpdateOutcome } from '../types.ts';
import { BINARY_ARRAYS, type ArrayParameters } from './binary-arrays.ts';
import { CONNECTION_TRIES, InDoubt, named, writeInDoubt, type PgSchema, type StoreContext } from './connection.ts';
import { isConnectionFailure, pgFailure } from './failures.ts';
import { insertJobs } from './insert.ts';
import type { Announce } from './listener.ts';
import { noticePayload } from './notices.ts';
import { closedGate, encodeWrites, updateJobsText, withLog } from './sql/writes.ts';
import { leaveLine, lockLines, mayLeaveLine, releaseLine } from './ordered-keys.ts';

/** The store's job writes, on its context; `announced` tells other servers of the transitions they commit. */
export class Writes {
  private readonly t: string;

  constructor(
    private readonly ctx: StoreContext,
    /** Tells the other servers' watchers of committed transitions (`Listener.announced`). */
    private readonly announced: Announce,
  ) {
    this.t = ctx.t;
  }

  async insert(drafts: readonly JobDraft[], now: Micros): Promise<InsertOutcome[]> {
    // One INSERT statement is atomic by itself: no transaction round trips needed. Run again
    // after a lost answer it cannot create a job twice: each draft carries its job id, and a
    // row already holding that id is the earlier try's (see `insertJobs`). Supersede keys need
    // a transaction: the holders are locked, read and replaced before the INSERT.
    const context = {
      origin: this.ctx.origin,
      createdAt: this.ctx.createdAt,
      log: this.ctx.logging,
      prepare: this.ctx.prepare,
      binaryArrays: true,
    };
    if (!drafts.some((d) => (d.supersedeKey ?? null) !== null || (d.orderKey ?? null) !== null)) {
      return this.ctx.retrying(() => insertJobs(this.ctx.pool, this.ctx.schema, drafts, now, context));
    }
    const outcomes = await this.ctx.retrying(() =>
      this.ctx.tx(
        (db) => insertJobs(db, this.ctx.schema, drafts, now, context),
        `BEGIN; LOCK TABLE ${this.t}.kind_pauses, ${this.t}.kind_limits IN ROW SHARE MODE`,
      ),
    );
    this.announced(outcomes.flatMap((o) => (o.superseded === undefined ? [] : [o.superseded.record])));
    return outcomes;
  }

  async update(jobId: string, change: (current: JobRecord) => Change, now: Micros): Promise<UpdateOutcome> {
    const outcome = await this.updateOnce(jobId, change, now);
    this.announced([outcome.record]);
    return outcome;
  }

  private async updateOnce(jobId: string, change: (current: JobRecord) => Change, now: Micros): Promise<UpdateOutcome> {
    // Most changes (heartbeat, complete, fail, reap) touch one row: read it, apply the change,
    // and write it back only if the row is still what was read (compare-and-set on the
    // record), two round trips instead of a transaction's four; one when this store leased
    // the job and the row still holds that lease (`updateLease`). A change that creates jobs,
    // or a lost race, takes the locked transaction. Run again after a failed connection, it
    // reads the row afresh: only a write whose fate is known lets a failure through to here.
    return this.ctx.retrying(async () => {
      const lease = this.ctx.leases.get(jobId);
      if (lease !== undefined) {
        const outcome = await this.updateLease(jobId, lease, change, now);
        if (outcome !== null) return outcome;
      }
      const [row] = (
        await this.ctx.pool.query<{ record: Buffer }>(
          named(this.ctx.prepare, `SELECT record FROM ${this.t}.jobs WHERE job_id = $1`, [jobId]),
        )
      ).rows;
      if (row === undefined) throw notFound(`job ${jobId}`);
      const current = decodeRecord(row.record, `job ${jobId}`);
      const line = current.orderKey === null ? undefined : { tenant: current.tenant, key: current.orderKey };
      const next = change(current);
      // A job leaving its ordered key's line gives the next its turn, under the line's lock.
      if ((next.successors ?? []).length > 0 || mayLeaveLine(next.record))
        return this.lockedUpdate(jobId, change, now, line);
      const { written, inDoubt } = await this.casWrite([{ record: next.record, expected: row.record }], now);
      if (inDoubt.has(jobId)) throw writeInDoubt(jobId);
      if (written.has(jobId)) return { record: next.record, successors: [] };
      return this.lockedUpdate(jobId, change, now, line);
    });
  }

  /**
   * A change to a job this store leased, worked out from the lease as this store wrote it and
   * written if the row still holds exactly that: one round trip. `null` when the row must be
   * read instead: it changed since (the compare failed), or the change refused the lease as
   * remembered, which only the row can confirm, or the change creates jobs.
   */
  private async updateLease(
    jobId: string,
    lease: Buffer,
    change: (current: JobRecord) => Change,
    now: Micros,
  ): Promise<UpdateOutcome | null> {
    let next: Change;
    try {
      next = change(decodeRecord(lease, `job ${jobId}`));
    } catch {
      this.ctx.leases.forget(jobId);
      return null;
    }
    if ((next.successors ?? []).length > 0 || mayLeaveLine(next.record)) return null;
    const { written, inDoubt } = await this.casWrite([{ record: next.record, expected: lease }], now);
    if (inDoubt.has(jobId)) throw writeInDoubt(jobId);
    return written.has(jobId) ? { record: next.record, successors: [] } : null;
  }

  /**
   * One SELECT for the jobs this store did not lease itself (`leases`), the changes applied
   * here, then one UPDATE that writes each job whose row is still as read or as leased
   * (compare-and-set per row, as in `update`): one or two round trips for the whole batch. A
   * job whose row changed in between, or whose remembered lease refused an item, has its
   * items redone one by one through `update`, which reads it again.
   */
  async updateMany(items: readonly UpdateItem[], now: Micros): Promise<ItemResult<JobRecord>[]> {
    if (items.length === 0) return [];
    const stored = new Map<string, Buffer>();
    const unknown = new Set<string>();
    for (const { jobId } of items) {
      const lease = this.ctx.leases.get(jobId);
      if (lease !== undefined) stored.set(jobId, lease);
      else unknown.add(jobId);
    }
    const remembered = new Set(stored.keys());
    if (unknown.size > 0) {
      for (const [jobId, value] of await this.ctx.retrying(() => this.ctx.storedRecords([...unknown]))) {
        stored.set(jobId, value);
      }
    }
    const latest = new Map<string, JobRecord>();
    /** Jobs whose items run again against the row: their write missed, or a remembered lease refused one. */
    const redo = new Set<string>();
    const results = items.map((item): ItemResult<JobRecord> => {
      try {
        const raw = stored.get(item.jobId);
        if (raw === undefined) throw notFound(`job ${item.jobId}`);
        const { record } = item.change(latest.get(item.jobId) ?? decodeRecord(raw, `job ${item.jobId}`));
        latest.set(item.jobId, record);
        return itemOk(record);
      } catch (error) {
        if (remembered.has(item.jobId)) redo.add(item.jobId);
        return itemFailed(error);
      }
    });
    for (const jobId of redo) this.ctx.leases.forget(jobId);
    // A job leaving its ordered key's line takes `update`'s locked path (`lockedUpdate`).
    for (const record of latest.values()) if (mayLeaveLine(record)) redo.add(record.jobId);
    const writes = [...latest.values()].filter((record) => !redo.has(record.jobId));
    const { written, inDoubt } = await this.casWrite(
      writes.map((record) => ({ record, expected: stored.get(record.jobId) as Buffer })),
      now,
    );
    this.announced(writes.filter((record) => written.has(record.jobId)));
    for (const record of writes) if (!written.has(record.jobId)) redo.add(record.jobId);
    for (const [i, item] of items.entries()) {
      if (!redo.has(item.jobId)) continue;
      if (inDoubt.has(item.jobId)) {
        results[i] = itemFailed(writeInDoubt(item.jobId));
        continue;
      }
      try {
        results[i] = itemOk((await this.update(item.jobId, item.change, now)).record);
      } catch (error) {
        results[i] = itemFailed(error);
      }
    }
    return results;
  }

  /**
   * Read the row under a lock, apply the change, write it and create its successors, in one
   * transaction. A connection failure before COMMIT rolled it all back, so it passes to the
   * caller, which runs the update again. A COMMIT gone unanswered is settled by the row: it
   * holds the new record (committed, successors and all: the answer stands), the record as
   * read (nothing committed: run again), or something else (overtaken since; whether this
   * change is in it cannot be told, so `unavailable`).
   */
  private async lockedUpdate(
    jobId: string,
    change: (current: JobRecord) => Change,
    now: Micros,
    /** The job's ordered key, as read before (a job's key never changes): its line is locked first. */
    line?: { readonly tenant: string | null; readonly key: string },
  ): Promise<UpdateOutcome> {
    try {
      return (
        await this.ctx.tx(async (db) => {
          // An ordered key's line is locked before the row, as every writer of lines does.
          if (line !== undefined) await lockLines(db, [line]);
          const { rows } = await db.query<{ record: Buffer }>(
            named(this.ctx.prepare, `SELECT record FROM ${this.t}.jobs WHERE job_id = $1 FOR UPDATE`, [jobId]),
          );
          const row = rows[0];
          if (row === undefined) throw notFound(`job ${jobId}`);
          const next = change(decodeRecord(row.record, `job ${jobId}`));
          // The row is locked, so the compare always holds.
          await writeMany(this.ctx, db, [{ record: next.record, expected: row.record }], now);
          const turn = await leaveLine(db, this.t, next.record, now);
          if (turn !== null) await writeMany(this.ctx, db, [{ record: turn, expected: null }], now);
          const successors = await insertJobs(db, this.ctx.schema, next.successors ?? [], now, {
            origin: this.ctx.origin,
            createdAt: this.ctx.createdAt,
            updated: next.record,
            log: this.ctx.logging,
            binaryArrays: true,
          });
          return { outcome: { record: next.record, successors }, read: row.record };
          // The write locks' share (`writeLocks`) before the row lock: taken after it, a pause or
          // a limit waiting for this row would wait for this transaction, which waits for it.
        }, `BEGIN; LOCK TABLE ${this.t}.kind_pauses, ${this.t}.kind_limits IN ROW SHARE MODE`)
      ).outcome;
    } catch (error) {
      if (!(error instanceof InDoubt)) throw error;
      const { outcome, read } = error.result as { outcome: UpdateOutcome; read: Buffer };
      const stored = (await this.ctx.retrying(() => this.ctx.storedRecords([jobId]))).get(jobId);
      if (stored?.equals(encodeRecord(outcome.record))) return outcome;
      if (stored?.equals(read)) throw error.cause;
      throw writeInDoubt(jobId);
    }
  }

  /** `JobStore.releaseKey`: the line's release and the next job's turn, in one transaction (`releaseLine`). */
  async releaseKey(scope: QueueScope, key: string, now: Micros): Promise<JobRecord | null> {
    const turn = await this.ctx.retrying(() =>
      this.ctx.tx(async (db) => {
        const next = await releaseLine(db, this.t, scope, key, now);
        if (next !== null) await writeMany(this.ctx, db, [{ record: next, expected: null }], now);
        return next;
      }, `BEGIN; LOCK TABLE ${this.t}.kind_pauses, ${this.t}.kind_limits IN ROW SHARE MODE`),
    );
    if (turn !== null) this.announced([turn]);
    return turn;
  }

  /**
   * `writeMany` of compare-and-set rows on the pool, each statement committing on its own.
   * When the answer is lost, the rows tell what happened: a row holding its new record was
   * written; the rest are written again with the same compare, which holds only for a row
   * still as read, so a write that did land is never applied on top of itself. A row that
   * matches neither was overtaken, and whether this write landed first cannot be told: it
   * is `inDoubt`, and its caller answers `unavailable` rather than risk a second effect.
   */
  private async casWrite(
    rows: readonly { readonly record: JobRecord; readonly expected: Buffer }[],
    now: Micros,
  ): Promise<{ written: Set<string>; inDoubt: Set<string> }> {
    try {
      return { written: await writeMany(this.ctx, this.ctx.pool, rows, now), inDoubt: new Set() };
    } catch (error) {
      if (!isConnectionFailure(error)) throw error;
      this.ctx.logger.warn(
        { err: (error as Error).message },
        'postgres connection failed during a write; checking the rows',
      );
    }
    const written = new Set<string>();
    let unsettled = rows;
    for (let attempt = 2; ; attempt++) {
      try {
        const stored = await this.ctx.storedRecords(unsettled.map((row) => row.record.jobId));
        for (const { record } of unsettled)
          if (stored.get(record.jobId)?.equals(encodeRecord(record))) written.add(record.jobId);
        unsettled = unsettled.filter((row) => !written.has(row.record.jobId));
        for (const id of await writeMany(this.ctx, this.ctx.pool, unsettled, now)) written.add(id);
        return { written, inDoubt: new Set(unsettled.map((row) => row.record.jobId).filter((id) => !written.has(id))) };
      } catch (error) {
        if (!isConnectionFailure(error) || attempt >= CONNECTION_TRIES) throw pgFailure(error);
      }
    }
  }
}

/**
 * Store new versions of jobs in one statement however many there are. A row with an
 * `expected` record is written only if its stored record is still that one (compare-and-set
 * on the whole record); one without is a row this transaction holds locked. Jobs that are
 * Pending again (retried, reaped, backing off) also notify other servers' waiters, in the
 * same statement. Returns the ids written.
 */
export async function writeMany(
  ctx: StoreContext,
  db: Pick<pg.ClientBase, 'query'>,
  rows: readonly { readonly record: JobRecord; readonly expected: Buffer | null }[],
  now: Micros,
): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const { statement, values } = updateStatement(ctx.schema, rows, now, {
    origin: ctx.origin,
    log: ctx.logging,
    arrays: BINARY_ARRAYS,
  });
  const { rows: written } = await db.query<{ job_id: string }>(named(ctx.prepare, statement.text, statement.values));
  const ids = new Set(written.map((row) => row.job_id));
  for (const [i, { record }] of rows.entries()) {
    if (ids.has(record.jobId)) ctx.leases.remember(record, values[i] as Buffer);
    else ctx.leases.forget(record.jobId);
  }
  return ids;
}

/**
 * The statement of `writeMany` (the UPDATE, its log rows when `log`, its work notification sent
 * as `origin`), and the records' stored values in row order; the store's and an application's
 * transaction (`transactional.ts`) write jobs with the same one.
 */
export function updateStatement(
  schema: PgSchema,
  rows: readonly { readonly record: JobRecord; readonly expected: Buffer | null }[],
  now: Micros,
  context: { readonly origin: string; readonly log: boolean; readonly arrays: ArrayParameters },
): { statement: { text: string; values: unknown[] }; values: Buffer[] } {
  const { arrays } = context;
  const records = rows.map((r) => r.record);
  const pending = records.filter((r) => r.state === JobState.Pending);
  const encoded = encodeWrites(records, context.log);
  const statement = withLog(
    schema.table,
    updateJobsText(schema.table, pending.length > 0),
    [
      arrays.uuid(records.map((r) => r.jobId)),
      arrays.bytea(rows.map((r) => r.expected)),
      arrays.int2(records.map((r) => r.state)),
      arrays.int8(records.map((r) => closedGate(r, now))),
      arrays.int8(records.map((r) => r.leaseDeadline)),
      arrays.text(records.map((r) => r.workerId)),
      arrays.int8(records.map((r) => finishedAt(r))),
      arrays.bytea(encoded.values),
      ...(pending.length > 0 ? [schema.channel, noticePayload(context.origin, workNotices(pending, now))] : []),
    ],
    encoded.entries,
    arrays,
  );
  return { statement, values: encoded.values };
}
