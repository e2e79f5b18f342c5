/**
 * The transitions log: what each store appends, in the same atomic write as
 * the transition itself, for Watch to read and resume in. Which writes leave
 * an entry and what an entry holds are decided here, once, for every backend.
 *
 * An entry is the job as written, trimmed: no payload, no continuation, its
 * last {@link LOG_JOB_EVENTS} events, its result only up to
 * {@link LOG_RESULT_BYTES}. The transition, its detail and its time are the
 * job's last event. A position in the log is the store's own string,
 * self-describing (`<format>.<store id>.<numbers>`): a store refuses one it did
 * not make with `invalid_argument` naming `resume_token`, and one whose next
 * entries were pruned with `failed_precondition`.
 */
import { ErrorCode, invalidArgument, TelhaError } from './errors.ts';
import { inScope } from './scope.ts';
import { JobState, type JobEvent, type JobRecord, type Micros, type ScopeFilter } from './types.ts';

/**
 * Events kept on each entry's job: enough for the transition's own (a failure that dead-letters
 * writes `failed` then `dead`), without storing up to 1,000 events per transition.
 */
export const LOG_JOB_EVENTS = 3;

/**
 * The largest result an entry carries. A result may be up to `jobs.max_result_bytes` (16 MiB at
 * most) and the log keeps a day of transitions: a bigger result is left out of the entry (the
 * job's `result` reads `null` there) and read with Show, as `client.result` does.
 */
export const LOG_RESULT_BYTES = 1_024;

/**
 * A log entry's job: the record as written, trimmed (see {@link logEntryOf}), and what the entry
 * knows of a result it does not carry.
 */
export interface LogRecord extends JobRecord {
  /**
   * The size in bytes of the job's result when the entry does not carry it: 0 for a completed job
   * without one, the size of one over {@link LOG_RESULT_BYTES}. `null` when the entry carries the
   * result (or the job has none and is not completed), and on entries written before entries
   * said: there a completed job without a result may have had one left out.
   */
  readonly resultBytes: number | null;
}

/** Job events that only extend a lease: frequent, and no change a watcher waits for. */
const UNLOGGED: ReadonlySet<string> = new Set(['extended', 'checkpoint']);

const EMPTY = new Uint8Array(0);

/** Whether a write of `record` appends to the log: its last event is a transition a watcher sees. */
export function logsTransition(record: JobRecord): boolean {
  const last = record.events[record.events.length - 1];
  return last !== undefined && !UNLOGGED.has(last.transition);
}

/** The entry a write of `record` appends to the log: the job trimmed, or `null` when the write is no transition a watcher sees. */
export function logEntryOf(record: JobRecord): LogRecord | null {
  if (!logsTransition(record)) return null;
  const resultBytes = record.result?.byteLength ?? 0;
  const inline = record.result !== null && resultBytes <= LOG_RESULT_BYTES;
  // Field by field, not a spread: records reach here in several shapes (decoded, enqueued, moved
  // by a transition), and spreading an object of a shape V8 has seen many of is far slower than
  // this (bench/RESULTS.md, "Transitions without object spreads").
  return {
    jobId: record.jobId,
    tenant: record.tenant,
    kind: record.kind,
    payload: EMPTY,
    priority: record.priority,
    createdAt: record.createdAt,
    state: record.state,
    attempts: record.attempts,
    leaseGeneration: record.leaseGeneration,
    workerId: record.workerId,
    leaseDeadline: record.leaseDeadline,
    notBefore: record.notBefore,
    idempotencyKey: record.idempotencyKey,
    maxAttempts: record.maxAttempts,
    continuation: null,
    events: record.events.slice(-LOG_JOB_EVENTS),
    attemptDeadline: record.attemptDeadline,
    timeoutSecs: record.timeoutSecs,
    result: inline ? record.result : null,
    progress: record.progress,
    traceContext: record.traceContext,
    supersedeKey: record.supersedeKey,
    supersededBy: record.supersededBy,
    debounceUntil: record.debounceUntil,
    // Said only where a reader would otherwise have to look: a completed job's result not carried.
    resultBytes: inline || (record.result === null && record.state !== JobState.Completed) ? null : resultBytes,
  };
}

/**
 * The size of an entry's job's result, as far as the entry knows: that of the result it carries,
 * else its {@link LogRecord.resultBytes}; `null` when it cannot tell (an entry written before
 * entries said).
 */
export function resultBytesOf(entry: LogRecord): number | null {
  return entry.result === null ? entry.resultBytes : entry.result.byteLength;
}

/** The transition an entry records: its job's last event. */
export function transitionOf(entry: JobRecord): JobEvent {
  const last = entry.events[entry.events.length - 1];
  if (last === undefined) throw new Error(`log entry of job ${entry.jobId} has no event`);
  return last;
}

/** One entry as read. */
export interface LogEntry {
  /** Where a reader that has seen this entry continues. */
  readonly position: string;
  /** The store's number for the entry: increasing in log order on one store (RocksDB, memory); unique on PostgreSQL. */
  readonly seq: number;
  /** The job as written, trimmed (see {@link logEntryOf}). */
  readonly job: LogRecord;
}

/** Which entries a reader wants. */
export interface LogFilter {
  readonly scope: ScopeFilter;
  /** Kinds starting with this; `''` for all. */
  readonly kindPrefix: string;
  readonly jobId: string | null;
  /** Only entries whose job the transition left in one of these states (a job's outcome); omitted for all. */
  readonly states?: ReadonlySet<JobState>;
}

export function logMatches(job: Pick<JobRecord, 'tenant' | 'kind' | 'jobId' | 'state'>, filter: LogFilter): boolean {
  return (
    inScope(job, filter.scope) &&
    job.kind.startsWith(filter.kindPrefix) &&
    (filter.jobId === null || job.jobId === filter.jobId) &&
    (filter.states === undefined || filter.states.has(job.state))
  );
}

/** One read of the log: the entries that matched, and where the next read continues (past those that did not). */
export interface LogPage {
  readonly entries: readonly LogEntry[];
  readonly position: string;
}

/** What log pruning deletes: entries written before `before`, and the oldest past `maxEntries`; at most `limit` per call. */
export interface LogPruneParams {
  readonly before: Micros;
  readonly maxEntries: number;
  readonly limit: number;
}

/** Whether an entry, `at` its write and `behind` entries older than the newest, is past retention. */
export function logEntryExpired(at: Micros, behind: number, params: LogPruneParams): boolean {
  return at < params.before || behind >= params.maxEntries;
}

/**
 * Parse a position this store made: `<format>.<store id>.<n>...`, each `n` a decimal integer.
 * Anything else, or another store's, is `invalid_argument` naming `resume_token`.
 */
export function parsePosition(token: string, format: string, storeId: string, numbers: number): bigint[] {
  const parts = token.split('.');
  if (parts.length !== numbers + 2 || parts[0] !== format || !parts.slice(2).every((p) => /^\d{1,20}$/.test(p))) {
    throw invalidArgument('resume_token', 'not a resume token this server made: watch again without one');
  }
  if (parts[1] !== storeId) {
    throw invalidArgument('resume_token', 'a resume token from another store: watch again without one');
  }
  return parts.slice(2).map((p) => BigInt(p));
}

export function formatPosition(
  format: string,
  storeId: string,
  numbers: readonly (number | bigint | string)[],
): string {
  return [format, storeId, ...numbers.map(String)].join('.');
}

/** The log no longer holds the entries after a position: they were pruned past `watch.retain_secs` or `watch.retain_events`. */
export function positionPruned(): TelhaError {
  return new TelhaError(
    ErrorCode.FailedPrecondition,
    'resume token past the transitions log retention (watch.retain_secs, watch.retain_events): read the jobs with show or list, then watch again without one',
    { field: 'resume_token' },
  );
}
