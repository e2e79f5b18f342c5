/**
 * The queue a program opens: the rules of `core/` applied through one
 * storage backend, with lease long-polls and the background maintenance.
 *
 * Time comes from the injected {@link Clock}; tests pass a `ManualClock` and
 * move it. Every method validates its input before anything is written.
 *
 *     producers   enqueue · enqueueBatch (all or none) · enqueueEach (each on its own)
 *     workers     leaseNext · lease (many, optional long poll) · heartbeat · checkpoint
 *                 complete · fail · release · completeEach · failEach · releaseEach
 *     operators   show · list · counts · leased · retry · cancel · cancelMatching · discard · runNow
 *     schedules   createSchedule · updateSchedule · getSchedule · listSchedules · deleteSchedule · runSchedule
 *                 (fired by the scheduler, or `scheduler.tick()` in tests)
 *     pauses      pause · resume · pauses
 *     limits      setKindLimit · clearKindLimit · kindLimits (seeded from `[jobs.kinds]` at open)
 *     quotas      setTenantLimit · clearTenantLimit · tenantLimits (seeded from `[jobs.tenants]`)
 *     lifecycle   maintenance (reaper, pruning) · waits · events · stats · storeMetrics · close
 */
import { systemClock, type Clock } from '../core/clock.ts';
import { DEFAULT_CONFIG, type TelhaConfig } from '../core/config.ts';
import { asBuffer, checkResult, draftJob } from '../core/drafts.ts';
import { eachOnItsOwn } from './each.ts';
import { ErrorCode, invalidArgument, notFound, TelhaError } from '../core/errors.ts';
import {
  MAX_BATCH_JOBS,
  MAX_LEASE_BATCH,
  MAX_LIST_LIMIT,
  MAX_SCHEDULES_PER_SCOPE,
  SYSTEM_KIND_PREFIX,
} from '../core/bounds.ts';
import { LIST_ORDERS } from '../core/list-order.ts';
import { silentLogger, type Logger } from '../core/logger.ts';
import { assertInScope, inScope, scopeOfRecord } from '../core/scope.ts';
import { checkPause, checkPausePrefix, DEFAULT_PAUSE_BOUNDS, type Pause } from '../core/pauses.ts';
import type { KindLimit, KindLimitStatus } from '../core/kind-limits.ts';
import type { TenantLimit, TenantLimitStatus } from '../core/tenant-limits.ts';
import {
  applyChanges,
  checkChanges,
  draftSchedule,
  runNowJob,
  type NewSchedule,
  type Schedule,
  type ScheduleChanges,
} from '../core/schedules.ts';
import * as transitions from '../core/transitions.ts';
import { staysInLine, type BlockedKey } from '../core/ordered-keys.ts';
import { failRequest } from '../core/transitions.ts';
import {
  ANY_SCOPE,
  itemFailed,
  itemOk,
  JobState,
  workNotices,
  type CountRow,
  type EnqueueResult,
  type ItemResult,
  type JobRecord,
  type LeaseFence,
  type ListPage,
  type Micros,
  type NewJob,
  type QueueScope,
  type ScopeFilter,
} from '../core/types.ts';
import {
  checkBytes,
  checkProgress,
  checkIntegerInRange,
  checkOrderKey,
  checkJobId,
  checkKindPrefix,
  checkKindPrefixes,
  checkScheduleName,
  checkScope,
  checkWorkerId,
  parseFence,
} from '../core/validate.ts';
import type { BackupSummary, JobStore, SchedulePage, StoreMetrics, StoreStats } from '../storage/types.ts';
import { newJobId } from '../codec/job-ids.ts';
import { Maintenance } from './maintenance.ts';
import { ChangeFeed } from './feed.ts';
import { QueueEventEmitter } from './observers.ts';
import { Scheduler } from './scheduler.ts';
import { KindLanes } from './kind-lanes.ts';
import { TenantQuotas } from './tenant-quotas.ts';
import { WorkSignal, type WakeReason } from './work-signal.ts';
import { tracedEnqueue } from '../tracing/spans.ts';
import { fencedEach, fencedWrite, operate, type WriteContext } from './job-writes.ts';
import { cancelMatching, cancelRequest } from './cancel-matching.ts';
import type {
  LeaseOptions,
  LeaseManyOptions,
  CompleteOptions,
  HeartbeatOptions,
  CompleteResult,
  FailOptions,
  Completion,
  Failure,
  Release,
  ListOptions,
  CancelOptions,
  RunNowOptions,
  CancelMatchingOptions,
  LeasedOptions,
  ScheduleListOptions,
  PauseOptions,
  ResumeOptions,
  SetKindLimitOptions,
  SetTenantLimitOptions,
  LeaseWaits,
  QueueOptions,
} from './queue-options.ts';

export type { SchedulePage, StoreMetrics };

/** Blocked keys a listing answers by default, and at most. */
export const DEFAULT_BLOCKED_KEYS = 100;
export const MAX_BLOCKED_KEYS = 1_000;

export class Queue {
  readonly config: TelhaConfig;
  readonly clock: Clock;
  /** The reaper and the maintenance runner; started by the constructor unless `services: false`. */
  readonly maintenance: Maintenance;
  /** Fires due schedules every `schedules.interval_ms`; started with the other services if `schedules.enabled`. */
  readonly scheduler: Scheduler;
  private readonly store: JobStore;
  private readonly logger: Logger;
  private readonly policy: transitions.RetryPolicy;
  /** In-process notifications of what this queue does (`transition`, `refused`, `parked`); see `QueueEvents`. */
  readonly events: QueueEventEmitter;
  /** The store's transitions log, which Watch reads, and a signal that it may have grown. */
  readonly feed: ChangeFeed;
  private readonly work = new WorkSignal(() => this.events.parked());
  private readonly waitsEnded: Record<WakeReason, number> = { woken: 0, timeout: 0, aborted: 0 };
  /** The kind limits and the lanes they make: claims wait for the `[jobs.kinds]` ones to be stored. */
  private readonly lanes: KindLanes;
  private readonly quotas: TenantQuotas;
  private closed = false;
  /** What the writes of `job-writes.ts` and `cancel-matching.ts` need of this queue. */
  private readonly writes: WriteContext;

  constructor(options: QueueOptions) {
    this.store = options.store;
    this.config = options.config ?? DEFAULT_CONFIG;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.events = new QueueEventEmitter(this.logger);
    this.feed = new ChangeFeed(this.store, this.events, this.config.watch.enabled);
    this.writes = {
      store: this.store,
      clock: this.clock,
      events: this.events,
      assertOpen: () => this.assertOpen(),
      transitioned: (transition, records, previous, now) => this.transitioned(transition, records, previous, now),
    };
    this.policy = { config: this.config.jobs };
    this.maintenance = new Maintenance({
      store: this.store,
      queue: this,
      config: this.config,
      policy: this.policy,
      clock: this.clock,
      logger: this.logger,
      onReaped: (records, now) => {
        for (const record of records) if (record.state === JobState.Dead) this.logDead(record, 'lease expired');
        this.transitioned('reap', records, JobState.Leased, now);
        this.announce(records, now);
      },
    });
    this.scheduler = new Scheduler({
      store: this.store,
      config: this.config.schedules,
      clock: this.clock,
      logger: this.logger,
      onEnqueued: (records, now) => {
        this.transitioned('enqueue', records, null, now);
        this.announce(records, now);
      },
    });
    const controls = {
      store: this.store,
      config: this.config,
      clock: this.clock,
      logger: this.logger,
      work: this.work,
    };
    this.lanes = new KindLanes(controls);
    this.quotas = new TenantQuotas(controls);
    // Work announced by other servers sharing the store, or by transactional enqueues.
    this.store.watch?.((notices) => (notices === 'all' ? this.work.notifyAll() : this.work.notify(notices)));
    if (options.services ?? true) {
      this.maintenance.start();
      this.scheduler.start();
    }
  }

  /** The store's backend name (`rocksdb`, `postgres`, `memory`). */
  get backend(): string {
    return this.store.backend;
  }

  // ---- producers ----

  /** Enqueue one job. A repeated idempotency key returns the first job with `created: false`. */
  async enqueue(job: NewJob, scope: QueueScope): Promise<EnqueueResult> {
    const [result] = await this.enqueueBatch([job], scope);
    return result as EnqueueResult;
  }

  /**
   * Enqueue many jobs in one atomic write: all are stored, or none. Under an `enqueue` span
   * when an OpenTelemetry SDK is registered, whose context each job without one of its own carries.
   */
  enqueueBatch(jobs: readonly NewJob[], scope: QueueScope): Promise<EnqueueResult[]> {
    return tracedEnqueue(jobs, (traced) => this.enqueueBatchUntraced(traced, scope), onlyJobId);
  }

  private async enqueueBatchUntraced(jobs: readonly NewJob[], scope: QueueScope): Promise<EnqueueResult[]> {
    this.assertOpen();
    checkScope(scope);
    if (jobs.length === 0) return [];
    if (jobs.length > MAX_BATCH_JOBS) throw invalidArgument('jobs', `at most ${MAX_BATCH_JOBS} jobs per batch`);
    const now = this.clock.now();
    const drafts = jobs.map((job, i) => this.draft(scope, job, now, jobs.length === 1 ? '' : `jobs[${i}].`));
    return this.insert(drafts, now);
  }

  /**
   * Enqueue many jobs, each on its own: a job that fails validation gets its
   * own error and changes nothing; the others are stored in one write, as
   * concurrent `enqueue` calls would be by group commit. Traced as `enqueueBatch` is.
   */
  enqueueEach(jobs: readonly NewJob[], scope: QueueScope): Promise<ItemResult<EnqueueResult>[]> {
    return tracedEnqueue(jobs, (traced) => this.enqueueEachUntraced(traced, scope), onlyItemJobId);
  }

  private async enqueueEachUntraced(jobs: readonly NewJob[], scope: QueueScope): Promise<ItemResult<EnqueueResult>[]> {
    this.assertOpen();
    checkScope(scope);
    if (jobs.length > MAX_BATCH_JOBS) throw invalidArgument('jobs', `at most ${MAX_BATCH_JOBS} jobs per batch`);
    const now = this.clock.now();
    return eachOnItsOwn(
      jobs,
      (job) => this.draft(scope, job, now, ''),
      async (drafts) => (await this.insert(drafts, now)).map((result) => itemOk(result)),
    );
  }

  private draft(scope: QueueScope, job: NewJob, now: Micros, fieldPrefix: string) {
    return draftJob(scope, job, {
      now,
      fieldPrefix,
      maxPayloadBytes: this.config.jobs.max_payload_bytes,
      jobId: newJobId(),
    });
  }

  private async insert(drafts: Parameters<JobStore['insert']>[0], now: Micros): Promise<EnqueueResult[]> {
    const outcomes = await this.store.insert(drafts, now);
    const created = outcomes.filter((o) => o.created).map((o) => o.record);
    this.transitioned('enqueue', created, null, now);
    for (const from of [JobState.Pending, JobState.Leased]) {
      const superseded = outcomes.flatMap((o) => (o.superseded?.from === from ? [o.superseded.record] : []));
      if (superseded.length > 0) this.transitioned('cancel', superseded, from, now);
    }
    this.announce(created, now);
    return outcomes.map(({ record, created }) => ({ job: record, created }));
  }

  // ---- workers ----

  /** The next eligible job, or `null`: lowest priority byte first, FIFO within a priority. */
  async leaseNext(options: LeaseOptions): Promise<JobRecord | null> {
    return (await this.claim(options, 1))[0] ?? null;
  }

  /**
   * Up to `limit` jobs, in the order `leaseNext` would hand them out. With
   * `waitMs`, waits for one to become eligible when none is (long poll), and
   * returns as soon as a matching job is enqueued, retried, reaped, released or
   * its gate opens, or a kind limit holding it back frees (a job of its lane
   * leaves Leased, or its lane's next token is due); `[]` on timeout or abort.
   */
  async lease(options: LeaseManyOptions): Promise<JobRecord[]> {
    const limit = checkIntegerInRange('limit', options.limit ?? 1, 1, MAX_LEASE_BATCH);
    const waitMs = options.waitMs ?? 0;
    const scope = options.scope ?? ANY_SCOPE;
    const kinds = checkKindPrefixes(options.kinds);
    const deadline = performance.now() + waitMs;
    for (;;) {
      const seen = this.work.version;
      const jobs = await this.claim(options, limit);
      const remaining = deadline - performance.now();
      if (jobs.length > 0 || remaining <= 0 || options.signal?.aborted || this.closed) return jobs;
      const now = this.clock.now();
      const gate = await this.store.nextGateAt(scope, now);
      const untilGate = gate === null ? remaining : Math.max(1, Math.ceil((gate - now) / 1000));
      // A shared store can gain work that no announcement reaches (a lost notification):
      // look again after its poll interval at the latest.
      const sleep = Math.min(remaining, untilGate, this.store.pollIntervalMs ?? Infinity);
      const reason = await this.work.wait(scope, kinds, seen, sleep, options.signal);
      this.waitsEnded[reason]++;
      // Given up on: claim nothing more (a Work stream that is closing would only hand it back).
      if (options.signal?.aborted) return [];
    }
  }

  private async claim(options: LeaseOptions, limit: number): Promise<JobRecord[]> {
    this.assertOpen();
    await Promise.all([this.lanes.seeded, this.quotas.seeded]);
    const scope = options.scope ?? ANY_SCOPE;
    if (scope.type !== 'any') checkScope(scope);
    const workerId = checkWorkerId(options.workerId);
    const kinds = checkKindPrefixes(options.kinds);
    const now = this.clock.now();
    const leased = await this.store.claim({
      scope,
      kinds,
      now,
      limit,
      fair: scope.type === 'any' && this.config.jobs.fair_tenants,
      lease: (record) => transitions.lease(record, workerId, now, this.policy),
    });
    this.transitioned('lease', leased, JobState.Pending, now);
    return leased;
  }

  /** Lease long-polls: parked now, and how the finished ones ended. */
  get waits(): LeaseWaits {
    return { parked: this.work.waiting, ended: { ...this.waitsEnded } };
  }

  /**
   * Extend a lease by one TTL, storing `progress` with it when given. `scope` (default every
   * scope) confines which jobs the caller may touch.
   */
  async heartbeat(
    jobId: string,
    fence: LeaseFence,
    options: HeartbeatOptions = {},
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<JobRecord> {
    const progress = options.progress === undefined ? null : checkProgress(options.progress);
    return fencedWrite(this.writes, 'heartbeat', jobId, fence, scope, (r, f, now) =>
      transitions.heartbeat(r, f, now, this.policy, progress),
    );
  }

  /** Store an opaque continuation and extend the lease, in the same write. */
  checkpoint(
    jobId: string,
    fence: LeaseFence,
    continuation: Uint8Array,
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<JobRecord> {
    const bytes = asBuffer(checkBytes('continuation', continuation, this.config.jobs.max_payload_bytes));
    return fencedWrite(this.writes, 'checkpoint', jobId, fence, scope, (r, f, now) =>
      transitions.checkpoint(r, f, bytes, now, this.policy),
    );
  }

  /**
   * Complete a leased job; with `successors`, also enqueue them in the same
   * fenced atomic write: a stale completion is rejected together with its chain link.
   */
  async complete(
    jobId: string,
    fence: LeaseFence,
    options: CompleteOptions = {},
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<CompleteResult> {
    this.assertOpen();
    const id = checkJobId(jobId);
    const checkedFence = parseFence(fence);
    const requested = options.successors ?? [];
    if (requested.length > MAX_BATCH_JOBS) throw invalidArgument('successors', `at most ${MAX_BATCH_JOBS} successors`);
    const result = this.checkResult(options.result);
    const now = this.clock.now();
    const outcome = await this.store
      .update(
        id,
        (current) => {
          assertInScope(current, scope);
          // The successors' scope is the completed job's, known only once it is read.
          const successors = requested.map((job, i) =>
            this.draft(scopeOfRecord(current), job, now, `successors[${i}].`),
          );
          return { record: transitions.complete(current, checkedFence, now, result), successors };
        },
        now,
      )
      .catch((error: unknown) => {
        this.events.refused(error, now);
        throw error;
      });
    const created = outcome.successors.filter((o) => o.created).map((o) => o.record);
    this.transitioned('complete', [outcome.record], JobState.Leased, now);
    this.transitioned('enqueue', created, null, now);
    this.announce(created, now);
    return {
      job: outcome.record,
      successors: outcome.successors.map(({ record, created }) => ({ job: record, created })),
    };
  }

  /** Fail a leased job: one attempt more, then a retry behind a backoff gate, or Dead. */
  async fail(
    jobId: string,
    fence: LeaseFence,
    options: FailOptions,
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<JobRecord> {
    const request = failRequest(options);
    const record = await fencedWrite(this.writes, 'fail', jobId, fence, scope, (r, f, now) =>
      transitions.fail(r, f, request, now, this.policy),
    );
    this.afterFailures([record]);
    return record;
  }

  /**
   * Hand back a leased job that was not finished (a worker shutting down):
   * Pending and leasable at once, with no attempt charged and no backoff, and
   * a `released` event. Fenced like `complete`; the next lease bumps the
   * generation, so the releasing worker can submit nothing more for it.
   */
  async release(jobId: string, fence: LeaseFence, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    const record = await fencedWrite(this.writes, 'release', jobId, fence, scope, (r, f, now) =>
      transitions.release(r, f, now),
    );
    this.announce([record], this.clock.now());
    return record;
  }

  /**
   * Complete many leased jobs, as a worker's results arrive together: each
   * item is fenced, applied and answered on its own, exactly as `complete`
   * would, but the store does them in one pass (RocksDB: one lock round and
   * one write; PostgreSQL: two statements for the whole batch).
   */
  async completeEach(
    items: readonly Completion[],
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<ItemResult<CompleteResult>[]> {
    this.checkEach(items);
    const results = new Array<ItemResult<CompleteResult>>(items.length);
    // A completion that enqueues successors takes the single path, which also creates them.
    const chained = items.map(async (item, i) => {
      if ((item.successors ?? []).length === 0) return;
      results[i] = await this.complete(item.jobId, item.fence, item, scope).then(itemOk, (error: unknown) =>
        itemFailed<CompleteResult>(error),
      );
    });
    const plain = items.flatMap((item, index) => ((item.successors ?? []).length === 0 ? [{ item, index }] : []));
    const applied = await fencedEach<Completion, Uint8Array | null>(
      this.writes,
      'complete',
      plain.map(({ item }) => item),
      scope,
      (record, fence, result, now) => transitions.complete(record, fence, now, result),
      (item) => this.checkResult(item.result),
    );
    applied.forEach((result, k) => {
      results[(plain[k] as { index: number }).index] = result.ok
        ? itemOk({ job: result.value, successors: [] })
        : result;
    });
    await Promise.all(chained);
    return results;
  }

  /** Fail many leased jobs, each as `fail` would, in one pass of the store (see `completeEach`). */
  async failEach(items: readonly Failure[], scope: ScopeFilter = ANY_SCOPE): Promise<ItemResult<JobRecord>[]> {
    this.checkEach(items);
    const results = await fencedEach(
      this.writes,
      'fail',
      items,
      scope,
      (record, fence, request, now) => transitions.fail(record, fence, request, now, this.policy),
      failRequest,
    );
    this.afterFailures(results.flatMap((result) => (result.ok ? [result.value] : [])));
    return results;
  }

  /** Hand back many leased jobs, each as `release` would, in one pass of the store (see `completeEach`). */
  async releaseEach(items: readonly Release[], scope: ScopeFilter = ANY_SCOPE): Promise<ItemResult<JobRecord>[]> {
    this.checkEach(items);
    const results = await fencedEach(this.writes, 'release', items, scope, (record, fence, _item, now) =>
      transitions.release(record, fence, now),
    );
    this.announce(
      results.flatMap((result) => (result.ok ? [result.value] : [])),
      this.clock.now(),
    );
    return results;
  }

  private afterFailures(records: readonly JobRecord[]): void {
    for (const record of records) if (record.state === JobState.Dead) this.logDead(record, 'failed');
    this.announce(records, this.clock.now());
  }

  /** A completion's result as stored: bounded by `jobs.max_result_bytes`, or `null` for none. */
  private checkResult(result: Uint8Array | undefined): Uint8Array | null {
    return checkResult(result, this.config.jobs.max_result_bytes);
  }

  private checkEach(items: readonly unknown[]): void {
    this.assertOpen();
    if (items.length > MAX_BATCH_JOBS) throw invalidArgument('items', `at most ${MAX_BATCH_JOBS} per batch`);
  }

  // ---- operators ----

  /** Move a Dead or Cancelled job back to Pending with its attempts reset to 0. */
  async retry(jobId: string, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    const record = await operate(this.writes, 'retry', jobId, scope, (current, now) => transitions.retry(current, now));
    this.announce([record], this.clock.now());
    return record;
  }

  /**
   * Cancel a Pending or Leased job: it rests in Cancelled, never leased again
   * unless an operator retries it. A Leased job's holder is fenced out at once:
   * its next heartbeat, checkpoint, completion or failure is refused with a
   * lease conflict of reason `cancelled`. Refused with `failed_precondition`
   * for a Completed, Dead or Cancelled job.
   */
  async cancel(jobId: string, options: CancelOptions = {}, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    const request = cancelRequest(options);
    return operate(this.writes, 'cancel', jobId, scope, (current, now) => transitions.cancel(current, request, now));
  }

  /**
   * Discard a Dead job: it moves to Cancelled with a `discarded` event and leaves the Dead list;
   * its record stays until retention prunes it. Refused with `failed_precondition` for a job
   * that is not Dead.
   */
  async discard(jobId: string, options: CancelOptions = {}, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    const request = cancelRequest(options);
    return operate(this.writes, 'discard', jobId, scope, (current, now) => transitions.discard(current, request, now));
  }

  /**
   * Make a Pending job that waits behind a gate (a delay, or a failure's backoff) ready now,
   * keeping its attempts and its place in line. Refused with `failed_precondition` for a job
   * that is not Pending, or already ready.
   */
  async runNow(jobId: string, options: RunNowOptions = {}, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    const request = { by: options.by ?? null };
    const record = await operate(this.writes, 'runNow', jobId, scope, (current, now) =>
      transitions.runNow(current, request, now),
    );
    this.announce([record], this.clock.now());
    return record;
  }

  /**
   * Cancel every Pending or Leased job matching a filter, as `cancel` would,
   * a page at a time (each job its own atomic write, a page in one pass of the
   * store). A job that moved on between the scan and its write (completed,
   * cancelled by someone else) is skipped. Returns how many were cancelled.
   */
  cancelMatching(options: CancelMatchingOptions = {}): Promise<number> {
    return cancelMatching(this.writes, options);
  }

  /** The whole record with its events, found by id. A job outside `scope` is reported as not found. */
  async show(jobId: string, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    this.assertOpen();
    const id = checkJobId(jobId);
    const record = await this.store.get(id);
    if (record === null || !inScope(record, scope)) throw notFound(`job ${id}`);
    return record;
  }

  /** Jobs newest first (or `order: 'oldest_first'`), one page at a time; system jobs only when asked for. */
  async list(options: ListOptions = {}): Promise<ListPage> {
    this.assertOpen();
    const scope = options.scope ?? ANY_SCOPE;
    if (scope.type !== 'any') checkScope(scope);
    const limit = checkIntegerInRange('limit', options.limit ?? 100, 1, MAX_LIST_LIMIT);
    const kindPrefix = options.kindPrefix === undefined ? null : checkKindPrefix(options.kindPrefix);
    const order = options.order ?? 'newest_first';
    if (!LIST_ORDERS.includes(order)) throw invalidArgument('order', `must be one of ${LIST_ORDERS.join(', ')}`);
    return this.store.list({
      scope,
      state: options.state ?? null,
      kindPrefix,
      limit,
      pageToken: options.pageToken ?? null,
      order,
      includeSystem: options.includeSystem ?? kindPrefix?.startsWith(SYSTEM_KIND_PREFIX) === true,
    });
  }

  /** Jobs per state and kind. */
  counts(scope: ScopeFilter = ANY_SCOPE): Promise<CountRow[]> {
    this.assertOpen();
    if (scope.type !== 'any') checkScope(scope);
    return this.store.counts(scope);
  }

  /** Jobs leased now, optionally of one worker, in key order. */
  leased(options: LeasedOptions = {}): Promise<JobRecord[]> {
    this.assertOpen();
    const scope = options.scope ?? ANY_SCOPE;
    if (scope.type !== 'any') checkScope(scope);
    const workerId = options.workerId === undefined ? null : checkWorkerId(options.workerId);
    const limit = checkIntegerInRange('limit', options.limit ?? MAX_LIST_LIMIT, 1, MAX_LIST_LIMIT);
    return this.store.leased(scope, workerId, limit);
  }

  // ---- schedules ----

  /**
   * Create a schedule: a cron expression in a time zone, or a fixed interval, and the job to
   * enqueue at each due time. Refused `failed_precondition` when the scope already has one of
   * this name or holds `MAX_SCHEDULES_PER_SCOPE` (1,000).
   */
  async createSchedule(schedule: NewSchedule, scope: QueueScope): Promise<Schedule> {
    this.assertOpen();
    checkScope(scope);
    const draft = draftSchedule(scope, schedule, this.scheduleContext());
    await this.store.createSchedule(draft, MAX_SCHEDULES_PER_SCOPE);
    return draft;
  }

  /**
   * Change a schedule; each field given replaces the stored one. `paused: true` stops it firing;
   * `paused: false` resumes it from its next due time after now, without catching up.
   */
  async updateSchedule(name: string, changes: ScheduleChanges, scope: QueueScope): Promise<Schedule> {
    this.assertOpen();
    checkScope(scope);
    const checked = checkScheduleName(name);
    const context = this.scheduleContext();
    checkChanges(scope, changes, context);
    return this.store.updateSchedule(scope, checked, (current) => applyChanges(current, changes, context));
  }

  /** One schedule by name; `not_found` when its scope has none of that name. */
  async getSchedule(name: string, scope: QueueScope): Promise<Schedule> {
    this.assertOpen();
    checkScope(scope);
    const checked = checkScheduleName(name);
    const schedule = await this.store.getSchedule(scope, checked);
    if (schedule === null) throw notFound(`schedule ${checked}`);
    return schedule;
  }

  /** Schedules by scope, then name, one page at a time. */
  async listSchedules(options: ScheduleListOptions = {}): Promise<SchedulePage> {
    this.assertOpen();
    const scope = options.scope ?? ANY_SCOPE;
    if (scope.type !== 'any') checkScope(scope);
    const limit = checkIntegerInRange('limit', options.limit ?? 100, 1, MAX_LIST_LIMIT);
    return this.store.listSchedules({ scope, limit, pageToken: options.pageToken ?? null });
  }

  /** Delete a schedule; the jobs it enqueued stay. `not_found` when there is none of that name. */
  async deleteSchedule(name: string, scope: QueueScope): Promise<void> {
    this.assertOpen();
    checkScope(scope);
    const checked = checkScheduleName(name);
    if (!(await this.store.deleteSchedule(scope, checked))) throw notFound(`schedule ${checked}`);
  }

  /**
   * Enqueue a schedule's job now (`runNowJob`), outside its timing: its next due time stays, so
   * it still fires then, and a paused schedule runs too, since someone asked. `not_found` when
   * the scope has no schedule of that name.
   */
  async runSchedule(name: string, scope: QueueScope): Promise<EnqueueResult> {
    const schedule = await this.getSchedule(name, scope);
    return this.enqueue(runNowJob(schedule, this.clock.now()), scope);
  }

  private scheduleContext(): { now: Micros; maxPayloadBytes: number } {
    return { now: this.clock.now(), maxPayloadBytes: this.config.jobs.max_payload_bytes };
  }

  // ---- pauses ----

  /**
   * Pause a kind prefix in a scope, or everywhere: its Pending jobs stay and enqueues are
   * accepted, but no claim leases them until `resume`; leased jobs finish normally. Durable.
   * Pausing what is paused already returns the earlier pause. Refused `failed_precondition`
   * past `MAX_PAUSES_PER_SCOPE` (100) in the scope or `MAX_PAUSES` (10,000) in all.
   */
  async pause(options: PauseOptions): Promise<Pause> {
    this.assertOpen();
    if (options.scope !== 'everywhere') checkScope(options.scope);
    const pause = checkPause({
      scope: options.scope,
      kindPrefix: options.kindPrefix,
      pausedAt: this.clock.now(),
      by: options.by ?? 'local',
    });
    return this.store.pauseKinds(pause, DEFAULT_PAUSE_BOUNDS);
  }

  /** Resume a paused prefix: its jobs are leasable again in their original order. `not_found` when it is not paused. */
  async resume(options: ResumeOptions): Promise<void> {
    this.assertOpen();
    if (options.scope !== 'everywhere') checkScope(options.scope);
    const kindPrefix = checkPausePrefix(options.kindPrefix);
    if (!(await this.store.resumeKinds(options.scope, kindPrefix))) throw notFound(`pause of ${kindPrefix}`);
    // Waiters parked while the work was held back: it is there now.
    this.work.notifyAll();
  }

  /** Pauses that hold back work in `scope` (its own and those everywhere); every pause for the default, every scope. */
  async pauses(scope: ScopeFilter = ANY_SCOPE): Promise<Pause[]> {
    this.assertOpen();
    if (scope.type !== 'any') checkScope(scope);
    return this.store.listPauses(scope);
  }

  // ---- ordered keys ----

  /**
   * Ordered keys in `scope` whose line cannot move on by itself (`core/ordered-keys.ts`): the
   * first job is Dead (policy `block`), or gone (pruned) with jobs waiting; at most `limit`
   * (1-1,000, default 100), by tenant and key.
   */
  async blockedKeys(scope: ScopeFilter = ANY_SCOPE, limit = DEFAULT_BLOCKED_KEYS): Promise<BlockedKey[]> {
    this.assertOpen();
    if (scope.type !== 'any') checkScope(scope);
    return this.store.blockedKeys(scope, checkIntegerInRange('limit', limit, 1, MAX_BLOCKED_KEYS));
  }

  /**
   * Release a blocked ordered key: its Dead head leaves the key (it stays Dead, and a retry
   * runs it as a plain job) and the next job's turn comes. Returns that job (`null` when none
   * waited). `not_found` when the key has no jobs; `failed_precondition` when it is not blocked.
   */
  async releaseKey(scope: QueueScope, orderKey: string): Promise<JobRecord | null> {
    this.assertOpen();
    checkScope(scope);
    const key = checkOrderKey(orderKey);
    if (key === null) throw invalidArgument('order_key', 'is required');
    const now = this.clock.now();
    const next = await this.store.releaseKey(scope, key, now);
    if (next !== null) this.announce([next], now);
    return next;
  }

  // ---- kind limits ----

  /**
   * Limit a kind prefix, everywhere: at most `concurrency` of its jobs leased at once, at most
   * `rate` leases per period (a token bucket whose burst is the count). Replaces the prefix's
   * limit; every following claim honours it, and jobs leased beyond a lowered limit finish
   * normally. A job's lane is the longest limit prefix covering its kind. Refused
   * `invalid_argument` naming the field for a bad value (and when neither bound is given),
   * `failed_precondition` past `MAX_KIND_LIMITS` (100) limits. Durable; token buckets are not
   * (a restart refills them).
   */
  async setKindLimit(options: SetKindLimitOptions): Promise<KindLimit> {
    this.assertOpen();
    return this.lanes.set(options);
  }

  /** Remove a prefix's limit: its jobs are unlimited (or in a shorter prefix's lane) from the next claim. `not_found` when there is none. */
  async clearKindLimit(kindPrefix: string): Promise<void> {
    this.assertOpen();
    return this.lanes.clear(kindPrefix);
  }

  /** Every kind limit by prefix, with its lane's leased jobs and whole tokens now. */
  async kindLimits(): Promise<KindLimitStatus[]> {
    this.assertOpen();
    return this.lanes.list();
  }

  /**
   * Limit a tenant, everywhere: at most `concurrency` of its jobs leased at once, `rate` leases
   * per period, and its `weight` in the fleet's fair order. Replaces the tenant's limit; refused
   * `invalid_argument` naming the field, `failed_precondition` past `MAX_TENANT_LIMITS`.
   */
  async setTenantLimit(options: SetTenantLimitOptions): Promise<TenantLimit> {
    this.assertOpen();
    return this.quotas.set(options);
  }

  /** Remove a tenant's limit: `not_found` when there is none. */
  async clearTenantLimit(tenant: string): Promise<void> {
    this.assertOpen();
    return this.quotas.clear(tenant);
  }

  /** Every tenant limit by tenant, with its leased jobs and whole tokens now. */
  async tenantLimits(): Promise<TenantLimitStatus[]> {
    this.assertOpen();
    return this.quotas.list();
  }

  /** Tell listeners of a committed transition; a job that left Leased frees room in its lane. */
  private transitioned(
    transition: transitions.TransitionName,
    records: readonly JobRecord[],
    previous: JobState | null,
    now: Micros,
  ): void {
    this.events.transition(transition, records, previous, now);
    if (previous === JobState.Leased) {
      this.lanes.freed(records);
      this.quotas.freed(records);
    }
    // A job that left its ordered key's line gave the next job its turn, in the store's write:
    // of a kind this queue cannot name from here, so every waiter looks.
    if (transition !== 'lease' && records.some((r) => r.orderKey !== null && !staysInLine(r))) this.work.notifyAll();
  }

  // ---- lifecycle ----

  /**
   * Resolves when the queue can serve calls now; rejects `unavailable` when it is closed or its
   * store cannot (a PostgreSQL that cannot be reached), for a readiness check.
   */
  async health(): Promise<void> {
    this.assertOpen();
    await this.store.health();
  }

  stats(): StoreStats {
    return this.store.stats();
  }

  /** The store's size and health figures, for metrics and readiness; `{}` from a store that keeps none. */
  async storeMetrics(): Promise<StoreMetrics> {
    this.assertOpen();
    return (await this.store.metrics?.()) ?? {};
  }

  /**
   * A consistent copy of the store in the directory `target`, on this machine, taken while the
   * queue serves (`JobStore.backup`); `failed_precondition` for a store that has no such copy
   * (PostgreSQL: its own tools back it up) or when `target` exists.
   */
  async backup(target: string): Promise<BackupSummary> {
    this.assertOpen();
    if (this.store.backup === undefined) {
      throw new TelhaError(
        ErrorCode.FailedPrecondition,
        `the ${this.store.backend} store has no online backup: back a PostgreSQL store up with PostgreSQL's own tools (pg_dump, base backups)`,
      );
    }
    return this.store.backup(target);
  }

  /** Stop the maintenance and the scheduler, end parked long-polls, close the store. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    // The [jobs.kinds] limits land (or are logged as failed) before the store goes.
    await Promise.all([this.maintenance.stop(), this.scheduler.stop(), this.lanes.seeded, this.quotas.seeded]);
    this.closed = true;
    this.work.wakeAll();
    await this.store.close();
  }

  /** Wake lease waiters for the jobs among `records` that are Pending now. */
  private announce(records: readonly JobRecord[], now: Micros): void {
    this.work.notify(
      workNotices(
        records.filter((j) => j.state === JobState.Pending),
        now,
      ),
    );
  }

  private logDead(record: JobRecord, why: string): void {
    this.logger.warn(
      { jobId: record.jobId, kind: record.kind, tenant: record.tenant, attempts: record.attempts },
      `job dead-lettered: ${why}`,
    );
  }

  private assertOpen(): void {
    if (this.closed) throw new TelhaError(ErrorCode.Unavailable, 'the queue is closed');
  }
}

/** The job a one-job enqueue answered, for its span. */
function onlyJobId(results: readonly EnqueueResult[]): string | null {
  return results[0]?.job.jobId ?? null;
}

function onlyItemJobId(results: readonly ItemResult<EnqueueResult>[]): string | null {
  const only = results[0];
  return only?.ok === true ? only.value.job.jobId : null;
}
