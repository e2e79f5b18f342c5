/**
 * The storage seam. It speaks in queue operations, not rows: each method is
 * one atomic step, and the decisions inside it (is this lease stale? retry or
 * dead-letter?) are the pure functions of `core/`, passed in or called by the
 * backend, so the embedded RocksDB store, the in-memory reference and a SQL
 * backend cannot drift apart on semantics. The conformance suite in
 * `src/testing/conformance/` (exported as `telha/testing`) runs against every
 * implementation; `test/conformance/` holds the four-line file per backend.
 */
import type { ListOrder } from '../core/list-order.ts';
import type { JobDraft } from '../core/drafts.ts';
import type { KindLimit, KindLimitStatus } from '../core/kind-limits.ts';
import type { TenantLimit, TenantLimitStatus } from '../core/tenant-limits.ts';
import type { Pause, PauseBounds, PauseScope } from '../core/pauses.ts';
import type { Schedule, ScheduleFiring } from '../core/schedules.ts';
import type { LogFilter, LogPage, LogPruneParams } from '../core/transitions-log.ts';
import type { BlockedKey } from '../core/ordered-keys.ts';
import type {
  CountRow,
  ItemResult,
  JobRecord,
  JobState,
  ListPage,
  Micros,
  QueueScope,
  ScopeFilter,
  WorkNotice,
} from '../core/types.ts';

export type { CountRow, JobDraft, ListPage };

export interface InsertOutcome {
  readonly record: JobRecord;
  /** `false` when an existing job with the same idempotency key in the same scope was returned instead. */
  readonly created: boolean;
  /**
   * The stored job this one's enqueue replaced (`NewJob.supersedeKey`), as it is now (Cancelled,
   * reason `superseded`), and the state it left, for the engine's metrics and lease waiters.
   */
  readonly superseded?: { readonly record: JobRecord; readonly from: JobState };
}

export interface ClaimParams {
  readonly scope: ScopeFilter;
  /** Kind prefixes; `null` leases any kind. */
  readonly kinds: readonly string[] | null;
  readonly now: Micros;
  readonly limit: number;
  /**
   * For a claim across every scope: take jobs in the fair order (`core/fair-order.ts`: system
   * jobs first, then one per tenant in turn from the store's cursor) instead of key order.
   * Absent or `false`, and for a claim in one scope: key order.
   */
  readonly fair?: boolean;
  /** The lease transition, applied to each chosen Pending record. */
  readonly lease: (record: JobRecord) => JobRecord;
}

/** The result of applying a change to one job. */
export interface Change {
  readonly record: JobRecord;
  /** Jobs to create in the same atomic write (chained enqueue). */
  readonly successors?: readonly JobDraft[];
}

/** One job's change in {@link JobStore.updateMany}: no successors, so it creates nothing. */
export interface UpdateItem {
  readonly jobId: string;
  readonly change: (current: JobRecord) => { readonly record: JobRecord };
}

export interface UpdateOutcome {
  readonly record: JobRecord;
  readonly successors: readonly InsertOutcome[];
}

export interface ListQuery {
  readonly scope: ScopeFilter;
  readonly state: JobState | null;
  readonly kindPrefix: string | null;
  readonly limit: number;
  /**
   * The previous page's `nextPageToken`, or `null` for the first page. Its
   * format is the store's own: a store refuses a token it did not make with
   * `invalid_argument` naming `page_token`.
   */
  readonly pageToken: string | null;
  /** By `created_at` then job id (`core/list-order.ts`), served from an index, never by sorting a page. */
  readonly order: ListOrder;
  /**
   * With scope `any`: whether the system scope's jobs (`system:prune`, one a minute) are listed
   * too. Other scopes ignore it.
   */
  readonly includeSystem: boolean;
}

export interface PruneParams {
  /** Completed, Dead or Cancelled. */
  readonly state: JobState;
  /** Rows that finished strictly before this time go. */
  readonly finishedBefore: Micros;
  readonly limit: number;
}

export interface ScheduleQuery {
  readonly scope: ScopeFilter;
  readonly limit: number;
  /** The previous page's `nextPageToken`, or `null` for the first page; a token no store made is `invalid_argument`. */
  readonly pageToken: string | null;
}

/** One page of schedules, by scope and then name. */
export interface SchedulePage {
  readonly schedules: readonly Schedule[];
  readonly nextPageToken: string | null;
}

/** A schedule that fired: the job its due time enqueued (or found, `created: false`) and the schedule as stored. */
export interface FiredSchedule {
  readonly schedule: Schedule;
  readonly job: InsertOutcome;
}

/** What {@link JobStore.importJobs} wrote. */
export interface ImportOutcome {
  /** Records written as they are. */
  readonly written: number;
  /** Records skipped because the store already holds their job id, or their scope's idempotency key. */
  readonly skipped: number;
}

/** An ordered key's line as a store keeps it (`core/ordered-keys.ts`): the key, and its jobs' ids oldest first. */
export interface StoredLine {
  /** The key's tenant, `null` for the system scope. */
  readonly tenant: string | null;
  readonly key: string;
  /** The first is the head, the only one that may run; the others wait (`ORDER_WAIT`). */
  readonly ids: readonly string[];
}

/** A supersede key and the job holding it (`core/supersede.ts`). */
export interface StoredHolder {
  /** The key's tenant, `null` for the system scope. */
  readonly tenant: string | null;
  readonly key: string;
  readonly jobId: string;
}

/**
 * What a store keeps about keys beside the job records ({@link JobStore.storedKeys}): which jobs
 * are in which ordered key's line, in what order, and which job holds each supersede key. The
 * records alone do not say: a job keeps its keys for life, after it has left its line (an
 * operator released it, or it was retried after it left) or let go of its supersede key.
 */
export interface StoredKeys {
  readonly lines: readonly StoredLine[];
  readonly holders: readonly StoredHolder[];
}

/** What {@link JobStore.importKeys} wrote. */
export interface KeysImportOutcome {
  /** Lines with at least one job placed in them, and lines of which no job was. */
  readonly lines: ImportOutcome;
  /** Holders written, and holders skipped. */
  readonly holders: ImportOutcome;
}

/** What a backup wrote ({@link JobStore.backup}). */
export interface BackupSummary {
  /** The backup's directory, as complete (renamed from `<path>.partial`, its marker written). */
  readonly path: string;
  /** Job rows copied. */
  readonly jobs: number;
  /** Rows copied, every column's (jobs, indexes, counters, the transitions log, meta rows). */
  readonly rows: number;
  /** The longest writes were held back: from asking for a quiet moment to the copy's cut being taken. */
  readonly pauseMicros: number;
  /** From the start to the backup's rename. */
  readonly durationMicros: number;
}

/** Counters a backend keeps about its own health. */
export interface StoreStats {
  /** Rows skipped because their value could not be decoded. */
  readonly corruptRows: number;
}

/**
 * Size and health figures a backend can give cheaply, for metrics and
 * readiness checks. Each is absent where the backend has no such figure.
 */
export interface StoreMetrics {
  /** Bytes the store occupies (RocksDB: SST files; PostgreSQL: the jobs table with its indexes and TOAST). */
  readonly sizeBytes?: number;
  /** RocksDB's estimate of the live data, without obsolete versions awaiting compaction. */
  readonly liveDataBytes?: number;
  /**
   * RocksDB has stopped writes: every write waits (too many memtables or level-0 files) or is
   * refused (`diskFull`).
   */
  readonly writeStopped?: boolean;
  /** The disk holding the store is full: writes are refused until space is freed, then resume. */
  readonly diskFull?: boolean;
  /** RocksDB's current delayed write rate in bytes/s; 0 when writes are not being slowed. */
  readonly delayedWriteRateBytes?: number;
  /** When the oldest Pending job (in any scope, gated or ready) was created; `null` when none is Pending. */
  readonly oldestPendingAt?: Micros | null;
}

export interface JobStore {
  /** Human-readable backend name, e.g. `rocksdb` or `memory`. */
  readonly backend: string;

  /**
   * Create jobs in one atomic write. A draft whose idempotency key already names a
   * job in its scope (stored, or earlier in the same call) returns that job and
   * writes nothing.
   */
  insert(drafts: readonly JobDraft[], now: Micros): Promise<InsertOutcome[]>;

  /**
   * Lease up to `limit` eligible Pending jobs (a job waiting for its ordered key's turn is
   * gated, `ORDER_WAIT`, and so never eligible): in key order (scope, priority,
   * created_at, id), or the fair order when `fair` asks for it across every scope,
   * skipping gated rows and other kinds, each moved atomically. Honours the stored kind
   * limits (`core/kind-limits.ts`): a job of a lane is taken while the lane has room
   * (`concurrency - leased - taken so far > 0` and a whole token left); a full lane's jobs are
   * skipped without stepping over them one by one, the order of the others unchanged.
   */
  claim(params: ClaimParams): Promise<JobRecord[]>;

  /**
   * Atomic read-check-write of one job. When the change takes the job out of its ordered key's
   * line (`core/ordered-keys.ts`), the next job's turn (`transitions.promote`) is in the same
   * write; so in `updateMany`, and so for an insert, which places each job with an ordered key
   * in its line (waiting, when the line holds a job). `change` receives the current record and
   * may throw (e.g. a lease conflict); then nothing is written and the error propagates.
   * Throws `not_found` for an unknown id.
   */
  update(jobId: string, change: (current: JobRecord) => Change, now: Micros): Promise<UpdateOutcome>;

  /**
   * Many independent read-check-writes in one pass (one lock round, one write
   * or statement), for the results a worker sends together. Each item is
   * atomic on its own and answered on its own: a change that throws, or an
   * unknown id, fails that item and writes nothing for it. Items naming the
   * same job apply in order, each seeing the one before. Rejects only when
   * the store itself fails.
   */
  updateMany(items: readonly UpdateItem[], now: Micros): Promise<ItemResult<JobRecord>[]>;

  /**
   * Write `records` as they are, for `telha import`: ids, states, attempts, lease generations and
   * holders, deadlines, events, results and checkpoints, all as another store exported them, so a
   * Leased job's holder can still complete it (and the reaper takes it on its deadline). A record
   * whose job id, or whose scope's idempotency key, the store already holds is skipped and the
   * stored job kept. One atomic write. Appends nothing to the transitions log: its entries are
   * the history of the store they happened in. Jobs created later sort after every imported one.
   */
  importJobs(records: readonly JobRecord[], now: Micros): Promise<ImportOutcome>;

  /**
   * Every ordered key's line and every supersede key's holder, for `telha export`. A line lists
   * only the jobs the store holds records of (a pruned head is left out: its line, starting with
   * a waiting job, reads as blocked all the same).
   */
  storedKeys(): Promise<StoredKeys>;

  /**
   * Put jobs `importJobs` wrote back where another store had them, for `telha import`: each
   * line's jobs, in the order given, join the end of their key's line (a waiting job is placed
   * behind the jobs the line holds already); each holder takes its key. A job the store does not
   * hold, or holds in a line already, is left out of its line; a holder whose job is not live
   * (Pending or Leased), or whose key another job holds, is skipped. One atomic write. Running it
   * again changes nothing more.
   */
  importKeys(keys: StoredKeys): Promise<KeysImportOutcome>;

  /**
   * A consistent copy of the whole store, written to `target` on this machine while it keeps
   * serving: every write acknowledged before the call is in it, no write is in it by halves.
   * Written to `<target>.partial`, its marker file last, then renamed, so a copy cut short
   * leaves nothing a restore accepts. Refuses `failed_precondition` when `target` exists.
   * Embedded stores only: a PostgreSQL store is backed up by PostgreSQL's own tools.
   */
  backup?(target: string): Promise<BackupSummary>;

  /** Ids of Leased jobs whose deadline is at or before `now`, earliest deadline first. */
  expiredLeases(now: Micros, limit: number): Promise<string[]>;

  /** Leased jobs, optionally of one worker, within a scope filter. */
  leased(scope: ScopeFilter, workerId: string | null, limit: number): Promise<JobRecord[]>;

  /** Delete finished rows past retention, with their index entries. Returns how many went. */
  prune(params: PruneParams): Promise<number>;

  get(jobId: string): Promise<JobRecord | null>;
  list(query: ListQuery): Promise<ListPage>;
  counts(scope: ScopeFilter): Promise<CountRow[]>;

  /**
   * Store a new schedule. Refuses `failed_precondition` when its scope already has one of that
   * name, or already holds `maxPerScope` schedules; then nothing is written.
   */
  createSchedule(schedule: Schedule, maxPerScope: number): Promise<void>;

  /**
   * Atomic read-check-write of one schedule, like `update` for a job; `change` may throw, and
   * then nothing is written. Throws `not_found` for an unknown name.
   */
  updateSchedule(scope: QueueScope, name: string, change: (current: Schedule) => Schedule): Promise<Schedule>;

  getSchedule(scope: QueueScope, name: string): Promise<Schedule | null>;
  listSchedules(query: ScheduleQuery): Promise<SchedulePage>;
  /** Whether there was such a schedule. Jobs it enqueued stay. */
  deleteSchedule(scope: QueueScope, name: string): Promise<boolean>;

  /**
   * Fire up to `limit` schedules due at `now` (not paused, `nextDueAt <= now`), earliest first.
   * For each, `fire` says what to write, and the store inserts the job (an idempotency key that
   * names an existing job creates nothing) and stores `next`, in one atomic write. A schedule
   * another server is firing at the same moment is skipped, and so is one `fire` answers
   * `null` for. Shared stores guarantee one job per due time across servers.
   */
  fireDueSchedules(
    now: Micros,
    limit: number,
    fire: (schedule: Schedule) => ScheduleFiring | null,
  ): Promise<FiredSchedule[]>;

  /**
   * Store a pause: from now on `claim` skips the Pending jobs it covers (`core/pauses.ts`), without
   * stepping over them one at a time where the backend's index allows. Returns the pause as
   * stored: the earlier one when its scope already pauses that prefix (nothing is written).
   * Refuses `failed_precondition` past `bounds` (per scope, and in all); then nothing is written.
   * Durable, and on a shared store seen by every server's claims.
   */
  pauseKinds(pause: Pause, bounds: PauseBounds): Promise<Pause>;

  /**
   * Ordered keys (`core/ordered-keys.ts`) whose line cannot move on by itself, in `filter`, in
   * `compareBlockedKeys` order, at most `limit`: the first job is Dead, or gone with jobs waiting.
   */
  blockedKeys(filter: ScopeFilter, limit: number): Promise<BlockedKey[]>;

  /**
   * An operator's release of a blocked ordered key: its Dead (or gone) head leaves the line,
   * staying Dead, and the next job's turn comes, in one atomic write. Returns that job as it is
   * now (`null`: none waited). `not_found` when the key has no line; `failed_precondition` when
   * the line is not blocked (`lineBlocked`). On a shared store, exact across servers.
   */
  releaseKey(scope: QueueScope, orderKey: string, now: Micros): Promise<JobRecord | null>;

  /** Remove a pause; whether there was one. Its jobs are leasable again, in their original order. */
  resumeKinds(scope: PauseScope, kindPrefix: string): Promise<boolean>;

  /** Pauses a listing for `filter` shows (`core/pauses.ts` `pauseInFilter`), in `comparePauses` order. */
  listPauses(filter: ScopeFilter): Promise<Pause[]>;

  // ---- the transitions log (core/transitions-log.ts) ----
  // Every write that changes a job appends its entry (`logEntryOf`) in the same atomic write, with
  // a position the store assigns: later reads see entries in one order, with no entry ever
  // appearing behind a position a reader has passed.

  /**
   * The position after the log's newest readable entry: a read after it returns every entry
   * committed after this call (and, on PostgreSQL, possibly a few committed just before).
   */
  logHead(): Promise<string>;

  /**
   * Up to `limit` entries after `after` that match `filter`, oldest first, and the position the
   * next read continues from (past the entries scanned that did not match). `invalid_argument`
   * naming `resume_token` for a position this store did not make; `failed_precondition`
   * (`positionPruned`) when entries after it have been pruned.
   */
  readLog(after: string, limit: number, filter: LogFilter): Promise<LogPage>;

  /** Delete the oldest entries past retention (`params`), at most `limit`, in log order. Returns how many went. */
  pruneLog(params: LogPruneParams): Promise<number>;

  /**
   * For a store shared by several processes: call `onAppend` when another process may have
   * appended to the log. Single-process stores leave this out: the queue tells of its own writes.
   */
  watchLog?(onAppend: () => void): void;

  /**
   * For a store shared by several processes: whether readers in this process follow the log now
   * (`ChangeFeed` says so as its first reader comes and its last goes), so the others tell of
   * their appends only while someone reads.
   */
  logFollowed?(following: boolean): void;

  /**
   * Store a kind limit, replacing the one of the same prefix; from the next claim on, every claim
   * (on a shared store, every server's) honours it. Refuses `failed_precondition` when the prefix
   * is new and `maxTotal` limits are held; then nothing is written. Durable. Returns it as stored.
   */
  setKindLimit(limit: KindLimit, maxTotal: number): Promise<KindLimit>;

  /** Remove a kind limit; whether there was one. Its lane is unlimited from the next claim on. */
  clearKindLimit(kindPrefix: string): Promise<boolean>;

  /**
   * Every kind limit, by prefix (`compareKindLimits`), with its lane's leased count (jobs leased
   * now whose lane it is) and whole tokens at `now` (`null` without a rate).
   */
  listKindLimits(now: Micros): Promise<KindLimitStatus[]>;

  /**
   * Store a tenant limit (`core/tenant-limits.ts`), replacing the tenant's; from the next claim
   * on, every claim (on a shared store, every server's) honours it. Refuses `failed_precondition`
   * when the tenant is new and `maxTotal` limits are held; then nothing is written. Durable.
   */
  setTenantLimit(limit: TenantLimit, maxTotal: number): Promise<TenantLimit>;

  /** Remove a tenant's limit; whether there was one. */
  clearTenantLimit(tenant: string): Promise<boolean>;

  /**
   * Every tenant limit, by tenant (`compareTenantLimits`), with the tenant's leased count and
   * whole tokens at `now` (`null` without a rate).
   */
  listTenantLimits(now: Micros): Promise<TenantLimitStatus[]>;

  /**
   * The earliest time after `now` a waiter in `scope` should look again: the earliest `notBefore`
   * among Pending jobs in scope, or, sooner, when the next token is due for a rate-limited lane
   * (with room in its concurrency) that holds back ready jobs in scope. `null` for neither.
   */
  nextGateAt(scope: ScopeFilter, now: Micros): Promise<Micros | null>;

  /**
   * For a store shared by several processes: call `onWork` when another
   * process (another server, an application's transactional enqueue) made
   * Pending work; `'all'` when it cannot say what. Single-process stores leave
   * this out: the queue announces its own writes.
   */
  watch?(onWork: (notices: readonly WorkNotice[] | 'all') => void): void;

  /**
   * For a shared store: the longest a lease waiter sleeps before looking
   * again, so a lost notification delays work by at most this long.
   */
  readonly pollIntervalMs?: number;

  /**
   * Resolves when the store can serve calls now; rejects `unavailable` when it cannot (closed,
   * or its database unreachable), for a readiness check to report.
   */
  health(): Promise<void>;

  stats(): StoreStats;

  /**
   * Size and health figures for metrics and readiness (`/readyz` calls it:
   * on PostgreSQL it is a round trip to the database). Optional for
   * third-party stores; those report nothing.
   */
  metrics?(): Promise<StoreMetrics>;

  close(): Promise<void>;
}
