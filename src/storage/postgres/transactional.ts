/**
 * Transactional calls, for applications that keep their own data in the same PostgreSQL
 * database as Telha: jobs enqueued, and a leased job's completion or failure, written through
 * the application's connection inside its transaction, so they happen only if that transaction
 * commits, together with the application's own writes.
 *
 * A completion or failure is fenced as the store's own is (`transitions.complete` and
 * `transitions.fail` on the row, locked): when it is refused (a stale fence, a job out of
 * scope or gone, bad input), the call aborts the transaction before it throws, so that the
 * application's writes cannot commit without the completion they went with.
 */
import type pg from 'pg';
import { systemClock, type Clock } from '../../core/clock.ts';
import { DEFAULT_CONFIG, type TelhaConfig } from '../../core/config.ts';
import { checkResult, draftJob } from '../../core/drafts.ts';
import { ErrorCode, invalidArgument, notFound, TelhaError } from '../../core/errors.ts';
import { MAX_BATCH_JOBS } from '../../core/bounds.ts';
import { assertInScope, scopeOfRecord } from '../../core/scope.ts';
import * as transitions from '../../core/transitions.ts';
import {
  ANY_SCOPE,
  type CompleteOptions,
  type CompleteResult,
  type EnqueueResult,
  type FailOptions,
  type JobRecord,
  type LeaseFence,
  type Micros,
  type NewJob,
  type QueueScope,
  type ScopeFilter,
} from '../../core/types.ts';
import { checkJobId, checkScope, parseFence } from '../../core/validate.ts';
import { newJobId } from '../../codec/job-ids.ts';
import { decodeRecord } from '../../codec/value.ts';
import { CreatedAtSequence } from '../shared.ts';
import type { Change } from '../types.ts';
import { TEXT_ARRAYS } from './binary-arrays.ts';
import { isConnectionFailure, pgFailure } from './failures.ts';
import { pgSchema } from './connection.ts';
import { insertJobs } from './insert.ts';
import { logNoticePayload } from './notices.ts';
import { abortText, lockJobText } from './sql/transactional.ts';
import { updateStatement } from './writes.ts';
import { leaveLine } from './ordered-keys.ts';

/** This process's created_at for jobs enqueued through applications' transactions: follows the clock. */
const createdAt = new CreatedAtSequence(0);

/**
 * Notifications from an application's transaction come from no store: every server hears
 * them (a store skips only its own origin's).
 */
const APPLICATION_ORIGIN = '';

/** The settings of a transactional call: where Telha's tables are, and the rules it applies. */
export interface TransactionalOptions {
  /** The schema a Telha server created (`storage.schema`). Default `telha`. */
  readonly schema?: string;
  /**
   * The configuration the servers run with: the payload and result caps, and for a failure the
   * retry rules (`jobs.max_attempts`, the backoff, `[jobs.kinds]`). Default the built-in defaults;
   * pass the servers' own (`loadConfig`) so a failure here is decided as theirs would be.
   */
  readonly config?: TelhaConfig;
  readonly clock?: Clock;
}

/** @deprecated Use {@link TransactionalOptions}, the settings of every transactional call. */
export type TransactionalEnqueueOptions = TransactionalOptions;

/**
 * Enqueue `jobs` in `scope` through `tx`, a `pg` client inside a transaction
 * the caller opened (`BEGIN`) and will commit or roll back. Validation and
 * idempotency are those of `Queue.enqueueBatch`. The schema must have been
 * created by a Telha server (it migrates at start). When the transaction
 * commits, its notification wakes lease calls parked on every server.
 */
export async function enqueueInTransaction(
  tx: pg.ClientBase,
  jobs: readonly NewJob[],
  scope: QueueScope,
  options: TransactionalOptions = {},
): Promise<EnqueueResult[]> {
  checkScope(scope);
  if (jobs.length > MAX_BATCH_JOBS) throw invalidArgument('jobs', `at most ${MAX_BATCH_JOBS} jobs per batch`);
  const now = (options.clock ?? systemClock).now();
  const maxPayloadBytes = (options.config ?? DEFAULT_CONFIG).jobs.max_payload_bytes;
  const drafts = jobs.map((job, i) =>
    draftJob(scope, job, {
      now,
      fieldPrefix: jobs.length === 1 ? '' : `jobs[${i}].`,
      maxPayloadBytes,
      jobId: newJobId(),
    }),
  );
  // Never run again here: the transaction is the application's, and a failed connection has
  // rolled it back. The failure reads as `unavailable`, so the application can tell it apart.
  const outcomes = await insertJobs(tx, pgSchema(options.schema ?? 'telha'), drafts, now, { createdAt }).catch(
    (error: unknown) => {
      throw pgFailure(error);
    },
  );
  return outcomes.map(({ record, created }) => ({ job: record, created }));
}

/**
 * Complete job `jobId`, leased under `fence`, through `tx`, a `pg` client inside a transaction
 * the caller opened (`BEGIN`): the job is Completed, with `result` and its `successors`
 * enqueued, if and only if that transaction commits. Validation, fencing and the written
 * record, transitions log entry and notifications are those of `Queue.complete`, so Watch,
 * result waiters and every server see the completion once it commits.
 *
 * Refused (a stale fence: `lease_conflict`, as a late completion through a server is; a job
 * gone or out of `scope`: `not_found`; bad input: `invalid_argument` naming the field), it
 * throws, and the transaction is aborted first: its COMMIT rolls back, the application's writes
 * with it, even if the caller catches the error and commits anyway. The job's row stays locked
 * by the transaction until it ends: the holder's heartbeats, the reaper and operators wait.
 */
export async function completeInTransaction(
  tx: pg.ClientBase,
  jobId: string,
  fence: LeaseFence,
  options: CompleteOptions = {},
  scope: ScopeFilter = ANY_SCOPE,
  settings: TransactionalOptions = {},
): Promise<CompleteResult> {
  const { jobs } = settings.config ?? DEFAULT_CONFIG;
  const { record, successors } = await changeInTransaction(tx, jobId, settings, () => {
    const checkedFence = parseFence(fence);
    const requested = options.successors ?? [];
    if (requested.length > MAX_BATCH_JOBS) throw invalidArgument('successors', `at most ${MAX_BATCH_JOBS} successors`);
    const result = checkResult(options.result, jobs.max_result_bytes);
    return {
      locks: requested.length > 0,
      change: (current, now) => {
        assertInScope(current, scope);
        const successorScope = scopeOfRecord(current);
        return {
          record: transitions.complete(current, checkedFence, now, result),
          successors: requested.map((job, i) =>
            draftJob(successorScope, job, {
              now,
              fieldPrefix: `successors[${i}].`,
              maxPayloadBytes: jobs.max_payload_bytes,
              jobId: newJobId(),
            }),
          ),
        };
      },
    };
  });
  return { job: record, successors };
}

/**
 * Fail job `jobId`, leased under `fence`, through `tx` inside the caller's transaction: one
 * attempt more, then Pending behind the backoff gate, or Dead at the attempt ceiling or when
 * `permanent`, decided by the same rules as `Queue.fail` (pass the servers' `config` in
 * `settings`), and written only if the transaction commits. Refused, it aborts the transaction
 * and throws, as `completeInTransaction` does.
 */
export async function failInTransaction(
  tx: pg.ClientBase,
  jobId: string,
  fence: LeaseFence,
  options: FailOptions,
  scope: ScopeFilter = ANY_SCOPE,
  settings: TransactionalOptions = {},
): Promise<JobRecord> {
  const policy: transitions.RetryPolicy = { config: (settings.config ?? DEFAULT_CONFIG).jobs };
  const { record } = await changeInTransaction(tx, jobId, settings, () => {
    const checkedFence = parseFence(fence);
    const request = transitions.failRequest(options);
    return {
      // A failure may make the job Pending again, which takes the write locks.
      locks: true,
      change: (current, now) => {
        assertInScope(current, scope);
        return { record: transitions.fail(current, checkedFence, request, now, policy) };
      },
    };
  });
  return record;
}

/** A checked request: the change to apply to the row, and whether the write takes the write locks. */
interface Prepared {
  readonly locks: boolean;
  readonly change: (current: JobRecord, now: Micros) => Change;
}

/**
 * The road of every transactional change: check the input (`prepare`), read the job's row under
 * a lock, apply the change, write it as the store writes (`updateStatement`: the record, its log
 * row, the work notification) and create its successors. Whatever refuses it, the transaction
 * is aborted before the error is thrown, unless its connection failed (then PostgreSQL has rolled
 * it back already).
 */
async function changeInTransaction(
  tx: pg.ClientBase,
  jobId: string,
  settings: TransactionalOptions,
  prepare: () => Prepared,
): Promise<{ record: JobRecord; successors: EnqueueResult[] }> {
  requireOpenTransaction(tx);
  let id: string | null = null;
  try {
    id = checkJobId(jobId);
    const { locks, change } = prepare();
    const now = (settings.clock ?? systemClock).now();
    const schema = pgSchema(settings.schema ?? 'telha');
    const { rows } = await tx.query<{ record: Buffer }>(lockJobText(schema.table, locks), [
      id,
      schema.channel,
      logNoticePayload(APPLICATION_ORIGIN),
    ]);
    const row = rows[0];
    if (row === undefined) throw notFound(`job ${id}`);
    const next = change(decodeRecord(row.record, `job ${id}`), now);
    // The row is locked by this transaction, so the write needs no compare: it always lands.
    const { statement } = updateStatement(schema, [{ record: next.record, expected: null }], now, {
      origin: APPLICATION_ORIGIN,
      log: true,
      arrays: TEXT_ARRAYS,
    });
    const written = await tx.query<{ job_id: string }>(statement.text, statement.values);
    if (written.rows.length !== 1)
      throw new TelhaError(ErrorCode.Internal, `job ${id}: its locked row was not written`);
    // Leaving its ordered key's line, the job gives the next its turn in this same transaction.
    const turn = await leaveLine(tx, schema.table, next.record, now);
    if (turn !== null) {
      const promoted = updateStatement(schema, [{ record: turn, expected: null }], now, {
        origin: APPLICATION_ORIGIN,
        log: true,
        arrays: TEXT_ARRAYS,
      });
      await tx.query(promoted.statement.text, promoted.statement.values);
    }
    const successors = await insertJobs(tx, schema, next.successors ?? [], now, {
      createdAt,
      updated: next.record,
    });
    return { record: next.record, successors: successors.map(({ record, created }) => ({ job: record, created })) };
  } catch (error) {
    if (!isConnectionFailure(error)) {
      const code = error instanceof TelhaError ? error.code : ErrorCode.Internal;
      // Already aborted when a statement of ours failed; then this fails too, which is as well.
      await tx.query(abortText(id, code)).catch(() => undefined);
    }
    throw pgFailure(error);
  }
}

/**
 * Refuse a client that is not inside an open transaction, before anything is written: outside
 * one each statement would commit on its own, and a failed one cannot commit anything. A client
 * that cannot tell (`getTransactionStatus`, pg 8.12 and later) is taken at its word.
 */
function requireOpenTransaction(tx: pg.ClientBase): void {
  const status = typeof tx.getTransactionStatus === 'function' ? tx.getTransactionStatus() : null;
  if (status === 'I') {
    throw new TelhaError(ErrorCode.FailedPrecondition, 'the client is not inside a transaction: BEGIN first');
  }
  if (status === 'E') {
    throw new TelhaError(ErrorCode.FailedPrecondition, 'the transaction has already failed: roll it back');
  }
}
