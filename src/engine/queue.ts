/**
 * The queue a program opens: core rules + a storage backend + the reaper and
 * the maintenance runner. Every operation has an `...At(now, ...)` form (the
 * spec's `finish_at` / `reap_expired_at`) so tests drive the clock; the plain
 * form reads the injected {@link Clock}.
 */
import type { BackoffByKind } from '../core/backoff.ts';
import { systemClock, type Clock } from '../core/clock.ts';
import { DEFAULT_CONFIG, type TelhaConfig } from '../core/config.ts';
import { ErrorCode, invalidArgument, isTelhaError, notFound, TelhaError } from '../core/errors.ts';
import { eachOnItsOwn } from '../core/each.ts';
import { silentLogger, type Logger } from '../core/logger.ts';
import { MAX_BATCH_JOBS, MAX_LEASE_BATCH, MAX_LIST_LIMIT } from '../core/limits.ts';
import * as transitions from '../core/transitions.ts';
import {
  ANY_SCOPE,
  itemFailed,
  itemOk,
  JobState,
  SYSTEM_SCOPE,
  type ItemResult,
  type JobRecord,
  type LeaseFence,
  type Micros,
  type QueueScope,
  type ScopeFilter,
  workNotices,
} from '../core/types.ts';
import {
  checkBytes,
  checkIntegerInRange,
  checkJobId,
  checkKindPrefixes,
  checkScope,
  checkWorkerId,
} from '../core/validate.ts';
import { inScope } from '../storage/shared.ts';
import type { CountRow, JobStore, ListPage, StoreStats, UpdateItem } from '../storage/types.ts';
import { asBuffer, DEFAULT_PRIORITY, draftJob } from './drafts.ts';
import { PeriodicService } from './periodic.ts';
import { WorkSignal, type WakeReason } from './work-signal.ts';

export { DEFAULT_PRIORITY };

/** What a producer asks for. Every field but `kind` is optional. */
export interface EnqueueOptions {
  readonly kind: string;
  /** Opaque bytes, at most `jobs.max_payload_bytes` (default 1 MiB). */
  readonly payload?: Uint8Array;
  /** 0-255, lower is sooner; default 128. */
  readonly priority?: number;
  /** Not leased before this many milliseconds from now. */
  readonly delayMs?: number;
  /** Not leased before this time (µs since the epoch). Wins over `delayMs`. */
  readonly notBefore?: Micros;
  /** This job's own attempt ceiling (the spec's `enqueue_with_max_attempts`). */
  readonly maxAttempts?: number;
  /** A second enqueue with the same key in the same scope returns the first job, for as long as it is retained. */
  readonly idempotencyKey?: string;
}

export interface EnqueueResult {
  readonly job: JobRecord;
  /** `false` when the idempotency key matched an existing job, which is returned instead. */
  readonly created: boolean;
}

export interface LeaseOptions {
  readonly workerId: string;
  /** Kind prefixes to accept; omitted or empty accepts every kind. */
  readonly kinds?: readonly string[];
}

export interface CompleteOptions {
  /** Jobs to enqueue in the completed job's scope, in the same fenced write (the spec's `enqueue_chained`). */
  readonly successors?: readonly EnqueueOptions[];
}

export interface CompleteResult {
  readonly job: JobRecord;
  readonly successors: readonly EnqueueResult[];
}

export interface FailOptions {
  readonly error: string;
  /** Default `true`. `false` dead-letters at once. */
  readonly retryable?: boolean;
}

/** One completion in {@link Queue.completeBatch}. */
export interface Completion extends CompleteOptions {
  readonly jobId: string;
  readonly fence: LeaseFence;
}

/** One failure in {@link Queue.failBatch}. */
export interface Failure extends FailOptions {
  readonly jobId: string;
  readonly fence: LeaseFence;
}

export interface ListOptions {
  readonly scope: ScopeFilter;
  readonly state?: JobState;
  readonly kindPrefix?: string;
  /** Default 100, at most 1,000. */
  readonly limit?: number;
  readonly after?: string;
}

export interface ReapResult {
  readonly reaped: number;
  readonly dead: number;
}

/** A handler of a `system:` job kind, run by the built-in maintenance runner. */
export type SystemTask = (job: JobRecord, now: Micros) => Promise<string | void>;

export interface QueueOptions {
  readonly store: JobStore;
  readonly config?: TelhaConfig;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Per-kind backoff pacing, set from code (the spec's `backoff_base_secs_by_kind`). */
  readonly backoffByKind?: BackoffByKind;
  /** Run the reaper and the maintenance runner on timers. Default `true`. */
  readonly services?: boolean;
}

export const MAINTENANCE_WORKER_ID = 'telha:maintenance';
export const PRUNE_KIND = 'system:prune';
const REAP_BATCH = 1_000;
const PRUNE_BATCH = 1_000;

export class Queue {
  readonly config: TelhaConfig;
  readonly clock: Clock;
  private readonly store: JobStore;
  private readonly logger: Logger;
  private readonly policy: transitions.RetryPolicy;
  private readonly reaper: PeriodicService;
  private readonly maintenance: PeriodicService;
  private readonly systemTasks = new Map<string, SystemTask>();
  private readonly work = new WorkSignal();
  private closed = false;

  constructor(options: QueueOptions) {
    this.store = options.store;
    this.config = options.config ?? DEFAULT_CONFIG;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.policy = { config: this.config.jobs, backoffByKind: options.backoffByKind ?? new Map() };
    this.reaper = new PeriodicService(
      'reaper',
      this.config.jobs.reaper_interval_secs * 1000,
      async () => {
        await this.reapExpired();
      },
      this.logger,
    );
    this.maintenance = new PeriodicService(
      'maintenance',
      this.config.retention.prune_interval_secs * 1000,
      () => this.runMaintenanceAt(this.clock.now()),
      this.logger,
    );
    // Work announced by other servers sharing the store, or by transactional enqueues.
    this.store.watch?.((notices) => (notices === 'all' ? this.work.notifyAll() : this.work.notify(notices)));
    this.systemTasks.set(PRUNE_KIND, (_job, now) => this.pruneAt(now).then((n) => `pruned=${n}`));
    if (options.services ?? true) this.startServices();
  }

  get backend(): string {
    return this.store.backend;
  }

  /** The spec's `spawn_reaper`, plus the maintenance runner. Idempotent. */
  startServices(): void {
    this.reaper.start();
    if (this.config.retention.enabled) this.maintenance.start();
  }

  async stopServices(): Promise<void> {
    await Promise.all([this.reaper.stop(), this.maintenance.stop()]);
  }

  // ---- enqueue ----

  enqueue(scope: QueueScope, job: EnqueueOptions): Promise<EnqueueResult> {
    return this.enqueueAt(this.clock.now(), scope, job);
  }

  async enqueueAt(now: Micros, scope: QueueScope, job: EnqueueOptions): Promise<EnqueueResult> {
    const [result] = await this.enqueueBatchAt(now, scope, [job]);
    return result as EnqueueResult;
  }

  /** Enqueue many jobs in one atomic write: all are stored, or none. */
  enqueueBatch(scope: QueueScope, jobs: readonly EnqueueOptions[]): Promise<EnqueueResult[]> {
    return this.enqueueBatchAt(this.clock.now(), scope, jobs);
  }

  async enqueueBatchAt(now: Micros, scope: QueueScope, jobs: readonly EnqueueOptions[]): Promise<EnqueueResult[]> {
    this.assertOpen();
    checkScope(scope);
    if (jobs.length === 0) return [];
    if (jobs.length > MAX_BATCH_JOBS) throw invalidArgument('jobs', `at most ${MAX_BATCH_JOBS} jobs per batch`);
    const drafts = jobs.map((job, i) =>
      draftJob(scope, job, now, jobs.length === 1 ? '' : `jobs[${i}].`, this.config.jobs.max_payload_bytes),
    );
    const outcomes = await this.store.insert(drafts, now);
    this.announce(
      outcomes.filter((o) => o.created).map((o) => o.record),
      now,
    );
    return outcomes.map(({ record, created }) => ({ job: record, created }));
  }

  /**
   * Enqueue many jobs, each on its own: a job that fails validation gets its
   * own error and changes nothing; the others are stored in one write, as
   * concurrent `enqueue` calls would be by group commit. For callers that
   * gather independent enqueues (the SDK's coalesced `enqueue`).
   */
  enqueueEach(scope: QueueScope, jobs: readonly EnqueueOptions[]): Promise<ItemResult<EnqueueResult>[]> {
    return this.enqueueEachAt(this.clock.now(), scope, jobs);
  }

  async enqueueEachAt(
    now: Micros,
    scope: QueueScope,
    jobs: readonly EnqueueOptions[],
  ): Promise<ItemResult<EnqueueResult>[]> {
    this.assertOpen();
    checkScope(scope);
    if (jobs.length > MAX_BATCH_JOBS) throw invalidArgument('jobs', `at most ${MAX_BATCH_JOBS} jobs per batch`);
    return eachOnItsOwn(
      jobs,
      (job) => draftJob(scope, job, now, '', this.config.jobs.max_payload_bytes),
      async (drafts) => {
        const outcomes = await this.store.insert(drafts, now);
        this.announce(
          outcomes.filter((o) => o.created).map((o) => o.record),
          now,
        );
        return outcomes.map(({ record, created }) => itemOk({ job: record, created }));
      },
    );
  }

  // ---- leasing ----

  /** The spec's `lease_next`: the next eligible job of one scope, or `null`. */
  async leaseNext(scope: QueueScope, options: LeaseOptions): Promise<JobRecord | null> {
    return (await this.leaseBatchAt(this.clock.now(), scope, options, 1))[0] ?? null;
  }

  async leaseNextAt(now: Micros, scope: ScopeFilter, options: LeaseOptions): Promise<JobRecord | null> {
    return (await this.leaseBatchAt(now, scope, options, 1))[0] ?? null;
  }

  /** The spec's `lease_next_any`: across every scope, system jobs first. For the internal worker fleet. */
  leaseNextAny(options: LeaseOptions): Promise<JobRecord | null> {
    return this.leaseNextAt(this.clock.now(), ANY_SCOPE, options);
  }

  /** Up to `limit` jobs at once, in the same order `leaseNext` would hand them out. */
  leaseBatch(scope: ScopeFilter, options: LeaseOptions, limit: number): Promise<JobRecord[]> {
    return this.leaseBatchAt(this.clock.now(), scope, options, limit);
  }

  async leaseBatchAt(now: Micros, scope: ScopeFilter, options: LeaseOptions, limit: number): Promise<JobRecord[]> {
    this.assertOpen();
    if (scope.type !== 'any') checkScope(scope);
    const workerId = checkWorkerId(options.workerId);
    const kinds = checkKindPrefixes(options.kinds);
    checkIntegerInRange('limit', limit, 1, MAX_LEASE_BATCH);
    return this.store.claim({
      scope,
      kinds,
      now,
      limit,
      lease: (record) => transitions.lease(record, workerId, now, this.policy),
    });
  }

  /**
   * Lease up to `limit` jobs, waiting up to `waitMs` for one to become
   * eligible (long poll). Returns as soon as a matching job is enqueued,
   * retried, reaped or its backoff gate opens; `[]` on timeout or abort.
   */
  async leaseWait(
    scope: ScopeFilter,
    options: LeaseOptions,
    limit: number,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<JobRecord[]> {
    const deadline = performance.now() + waitMs;
    const kinds = checkKindPrefixes(options.kinds);
    for (;;) {
      const seen = this.work.version;
      const now = this.clock.now();
      const jobs = await this.leaseBatchAt(now, scope, options, limit);
      const remaining = deadline - performance.now();
      if (jobs.length > 0 || remaining <= 0 || signal?.aborted || this.closed) return jobs;
      const gate = await this.store.nextGateAt(scope, now);
      const untilGate = gate === null ? remaining : Math.max(1, Math.ceil((gate - now) / 1000));
      // A shared store can gain work that no announcement reaches (a lost notification):
      // look again after its poll interval at the latest.
      const sleep = Math.min(remaining, untilGate, this.store.pollIntervalMs ?? Infinity);
      const reason = await this.work.wait(scope, kinds, seen, sleep, signal);
      this.waitStats[reason]++;
    }
  }

  /** How parked lease calls ended their waits, since open: woken by new work, timed out (or a gate opened), aborted. */
  readonly waitStats: Record<WakeReason, number> = { woken: 0, timeout: 0, aborted: 0 };

  /** Lease waiters currently parked, for metrics. */
  get waitingLeases(): number {
    return this.work.waiting;
  }

  private announce(jobs: readonly JobRecord[], now: Micros): void {
    this.work.notify(
      workNotices(
        jobs.filter((j) => j.state === JobState.Pending),
        now,
      ),
    );
  }

  // ---- fenced submissions ----

  /** Heartbeat: extend the lease by one TTL. `scope` defaults to every scope (the spec's `extend_any`). */
  extend(jobId: string, fence: LeaseFence, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    return this.extendAt(this.clock.now(), jobId, fence, scope);
  }

  async extendAt(now: Micros, jobId: string, fence: LeaseFence, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    return this.fenced(jobId, fence, scope, now, (r, f) => transitions.extend(r, f, now, this.policy));
  }

  /** Spec name for the fleet's cross-tenant heartbeat. */
  extendAny(jobId: string, fence: LeaseFence): Promise<JobRecord> {
    return this.extend(jobId, fence, ANY_SCOPE);
  }

  checkpoint(
    jobId: string,
    fence: LeaseFence,
    continuation: Uint8Array,
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<JobRecord> {
    return this.checkpointAt(this.clock.now(), jobId, fence, continuation, scope);
  }

  async checkpointAt(
    now: Micros,
    jobId: string,
    fence: LeaseFence,
    continuation: Uint8Array,
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<JobRecord> {
    const bytes = asBuffer(checkBytes('continuation', continuation, this.config.jobs.max_payload_bytes));
    return this.fenced(jobId, fence, scope, now, (r, f) => transitions.checkpoint(r, f, bytes, now, this.policy));
  }

  complete(
    jobId: string,
    fence: LeaseFence,
    options: CompleteOptions = {},
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<CompleteResult> {
    return this.completeAt(this.clock.now(), jobId, fence, options, scope);
  }

  /**
   * Complete a leased job; with `successors`, also enqueue them in the same
   * fenced atomic write (the spec's `enqueue_chained`): a stale completion is
   * rejected together with its chain link.
   */
  async completeAt(
    now: Micros,
    jobId: string,
    fence: LeaseFence,
    options: CompleteOptions = {},
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<CompleteResult> {
    this.assertOpen();
    const id = checkJobId(jobId);
    const checkedFence = checkFence(fence);
    const requested = options.successors ?? [];
    if (requested.length > MAX_BATCH_JOBS) throw invalidArgument('successors', `at most ${MAX_BATCH_JOBS} successors`);
    // Validate every successor before touching the store; their scope is the completed job's, known only inside.
    const outcome = await this.store.update(
      id,
      (current) => {
        assertInScope(current, scope);
        const successorScope: QueueScope =
          current.tenant === null ? SYSTEM_SCOPE : { type: 'tenant', tenant: current.tenant };
        const successors = requested.map((job, i) =>
          draftJob(successorScope, job, now, `successors[${i}].`, this.config.jobs.max_payload_bytes),
        );
        return { record: transitions.complete(current, checkedFence, now), successors };
      },
      now,
    );
    this.announce(
      outcome.successors.filter((o) => o.created).map((o) => o.record),
      now,
    );
    return {
      job: outcome.record,
      successors: outcome.successors.map(({ record, created }) => ({ job: record, created })),
    };
  }

  /** Chained completion under its spec name. */
  enqueueChained(jobId: string, fence: LeaseFence, successors: readonly EnqueueOptions[]): Promise<CompleteResult> {
    return this.complete(jobId, fence, { successors });
  }

  fail(jobId: string, fence: LeaseFence, options: FailOptions, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    return this.failAt(this.clock.now(), jobId, fence, options, scope);
  }

  async failAt(
    now: Micros,
    jobId: string,
    fence: LeaseFence,
    options: FailOptions,
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<JobRecord> {
    if (typeof options.error !== 'string') throw invalidArgument('error', 'must be a string');
    const request = { error: options.error, retryable: options.retryable ?? true };
    const record = await this.fenced(jobId, fence, scope, now, (r, f) =>
      transitions.fail(r, f, request, now, this.policy),
    );
    if (record.state === JobState.Dead) this.logDead(record, 'failed');
    this.announce([record], now);
    return record;
  }

  /**
   * Complete many leased jobs at once, as a worker's results arrive together:
   * each item is fenced, applied and answered on its own, exactly as
   * `complete` would, but the store does them in one pass (RocksDB: one lock
   * round and one write; PostgreSQL: two statements for the whole batch).
   */
  completeBatch(items: readonly Completion[], scope: ScopeFilter = ANY_SCOPE): Promise<ItemResult<CompleteResult>[]> {
    return this.completeBatchAt(this.clock.now(), items, scope);
  }

  async completeBatchAt(
    now: Micros,
    items: readonly Completion[],
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<ItemResult<CompleteResult>[]> {
    this.checkBatch(items);
    const results = new Array<ItemResult<CompleteResult>>(items.length);
    // A completion that enqueues successors takes the single path, which also creates them.
    const chained = items.map(async (item, i) => {
      if ((item.successors ?? []).length === 0) return;
      results[i] = await this.completeAt(now, item.jobId, item.fence, item, scope).then(itemOk, (error: unknown) =>
        itemFailed<CompleteResult>(error),
      );
    });
    const plain = items.flatMap((item, index) => ((item.successors ?? []).length === 0 ? [{ item, index }] : []));
    const applied = await this.fencedBatch(
      plain.map(({ item }) => item),
      scope,
      now,
      (record, fence) => transitions.complete(record, fence, now),
    );
    applied.forEach((result, k) => {
      results[(plain[k] as { index: number }).index] = result.ok
        ? itemOk({ job: result.value, successors: [] })
        : result;
    });
    await Promise.all(chained);
    return results;
  }

  /** Fail many leased jobs at once; each item as `fail` would, in one pass of the store (see `completeBatch`). */
  failBatch(items: readonly Failure[], scope: ScopeFilter = ANY_SCOPE): Promise<ItemResult<JobRecord>[]> {
    return this.failBatchAt(this.clock.now(), items, scope);
  }

  async failBatchAt(
    now: Micros,
    items: readonly Failure[],
    scope: ScopeFilter = ANY_SCOPE,
  ): Promise<ItemResult<JobRecord>[]> {
    const results = await this.fencedBatch(
      items,
      scope,
      now,
      (record, fence, item) =>
        transitions.fail(record, fence, { error: item.error, retryable: item.retryable ?? true }, now, this.policy),
      (item) => {
        if (typeof item.error !== 'string') throw invalidArgument('error', 'must be a string');
      },
    );
    const records = results.flatMap((result) => (result.ok ? [result.value] : []));
    for (const record of records) if (record.state === JobState.Dead) this.logDead(record, 'failed');
    this.announce(records, now);
    return results;
  }

  /** Each item's fenced change, validated on its own, then all applied in one `updateMany`. */
  private async fencedBatch<T extends { readonly jobId: string; readonly fence: LeaseFence }>(
    items: readonly T[],
    scope: ScopeFilter,
    now: Micros,
    apply: (record: JobRecord, fence: LeaseFence, item: T) => JobRecord,
    check?: (item: T) => void,
  ): Promise<ItemResult<JobRecord>[]> {
    this.checkBatch(items);
    return eachOnItsOwn(
      items,
      (item): UpdateItem => {
        const jobId = checkJobId(item.jobId);
        const fence = checkFence(item.fence);
        check?.(item);
        return {
          jobId,
          change: (current) => {
            assertInScope(current, scope);
            return { record: apply(current, fence, item) };
          },
        };
      },
      (updates) => this.store.updateMany(updates, now),
    );
  }

  private checkBatch(items: readonly unknown[]): void {
    this.assertOpen();
    if (items.length > MAX_BATCH_JOBS) throw invalidArgument('items', `at most ${MAX_BATCH_JOBS} per batch`);
  }

  private async fenced(
    jobId: string,
    fence: LeaseFence,
    scope: ScopeFilter,
    now: Micros,
    apply: (record: JobRecord, fence: LeaseFence) => JobRecord,
  ): Promise<JobRecord> {
    this.assertOpen();
    const id = checkJobId(jobId);
    const checked = checkFence(fence);
    const outcome = await this.store.update(
      id,
      (current) => {
        assertInScope(current, scope);
        return { record: apply(current, checked) };
      },
      now,
    );
    return outcome.record;
  }

  // ---- operators ----

  /** Operator retry: a Dead job back to Pending with its attempts reset to 0. */
  retry(jobId: string, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    return this.retryAt(this.clock.now(), jobId, scope);
  }

  async retryAt(now: Micros, jobId: string, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    this.assertOpen();
    const id = checkJobId(jobId);
    const outcome = await this.store.update(
      id,
      (current) => {
        assertInScope(current, scope);
        return { record: transitions.retry(current, now) };
      },
      now,
    );
    this.announce([outcome.record], now);
    return outcome.record;
  }

  /** The whole record with its events, found by id. A job outside `scope` is reported as not found. */
  async show(jobId: string, scope: ScopeFilter = ANY_SCOPE): Promise<JobRecord> {
    this.assertOpen();
    const id = checkJobId(jobId);
    const record = await this.store.get(id);
    if (record === null || !inScope(record, scope)) throw notFound(`job ${id}`);
    return record;
  }

  async list(options: ListOptions): Promise<ListPage> {
    this.assertOpen();
    if (options.scope.type !== 'any') checkScope(options.scope);
    const limit = checkIntegerInRange('limit', options.limit ?? 100, 1, MAX_LIST_LIMIT);
    if (options.after !== undefined && !/^[0-9a-f]*$/.test(options.after)) {
      throw invalidArgument('after', 'is not a cursor returned by list');
    }
    return this.store.list({
      scope: options.scope,
      state: options.state ?? null,
      kindPrefix: options.kindPrefix ?? null,
      limit,
      after: options.after ?? null,
    });
  }

  /** Jobs per state and kind. */
  counts(scope: ScopeFilter = ANY_SCOPE): Promise<CountRow[]> {
    this.assertOpen();
    if (scope.type !== 'any') checkScope(scope);
    return this.store.counts(scope);
  }

  /** The spec's `find_leased_any`: leased jobs across every scope, optionally of one worker. */
  findLeasedAny(workerId?: string, limit = MAX_LIST_LIMIT): Promise<JobRecord[]> {
    this.assertOpen();
    return this.store.leased(ANY_SCOPE, workerId === undefined ? null : checkWorkerId(workerId), limit);
  }

  /** The earliest time a gated job in scope becomes leasable, for waiters. */
  nextGateAt(scope: ScopeFilter, now: Micros = this.clock.now()): Promise<Micros | null> {
    return this.store.nextGateAt(scope, now);
  }

  // ---- background work ----

  reapExpired(): Promise<ReapResult> {
    return this.reapExpiredAt(this.clock.now());
  }

  /**
   * One pass over every scope, tenant and system: each expired lease becomes
   * Pending with backoff, or Dead at the ceiling. Each job is re-checked inside
   * its own atomic update, so a heartbeat that lands first wins.
   */
  async reapExpiredAt(now: Micros): Promise<ReapResult> {
    this.assertOpen();
    let reaped = 0;
    let dead = 0;
    for (;;) {
      const ids = await this.store.expiredLeases(now, REAP_BATCH);
      // Each job is its own atomic update (re-checked inside); running them together lets
      // group commit write a whole batch of reclaims at once instead of one write per job.
      const results = await Promise.all(
        ids.map(async (id) => {
          try {
            const update = await this.store.update(
              id,
              (current) => ({ record: transitions.reap(current, now, this.policy) }),
              now,
            );
            return update.record;
          } catch (error) {
            // Extended or finished since it was listed: nothing to reap.
            if (isTelhaError(error, ErrorCode.FailedPrecondition) || isTelhaError(error, ErrorCode.NotFound))
              return null;
            throw error;
          }
        }),
      );
      let progressed = 0;
      for (const record of results) {
        if (record === null) continue;
        progressed++;
        reaped++;
        if (record.state === JobState.Dead) {
          dead++;
          this.logDead(record, 'lease expired');
        } else {
          this.logger.info(
            { jobId: record.jobId, kind: record.kind, tenant: record.tenant, attempts: record.attempts },
            'reaped an expired lease',
          );
        }
      }
      this.announce(
        results.filter((r): r is JobRecord => r !== null),
        now,
      );
      if (ids.length < REAP_BATCH || progressed === 0) return { reaped, dead };
    }
  }

  /** Delete Completed and Dead jobs past their retention periods. Returns how many went. */
  async pruneAt(now: Micros): Promise<number> {
    this.assertOpen();
    const { completed_secs, dead_secs } = this.config.retention;
    let total = 0;
    for (const [state, secs] of [
      [JobState.Completed, completed_secs],
      [JobState.Dead, dead_secs],
    ] as const) {
      for (;;) {
        const n = await this.store.prune({ state, finishedBefore: now - secs * 1_000_000, limit: PRUNE_BATCH });
        total += n;
        if (n < PRUNE_BATCH) break;
      }
    }
    return total;
  }

  /**
   * One maintenance tick: schedule this interval's `system:prune` job in the
   * system scope (idempotent per interval), then lease and run every due
   * system job. A crash mid-task leaves the job leased; the reaper hands it back.
   */
  async runMaintenanceAt(now: Micros): Promise<void> {
    this.assertOpen();
    const interval = this.config.retention.prune_interval_secs * 1_000_000;
    await this.enqueueAt(now, SYSTEM_SCOPE, {
      kind: PRUNE_KIND,
      priority: 0,
      idempotencyKey: `${PRUNE_KIND}@${Math.floor(now / interval)}`,
    });
    const fleet = { workerId: MAINTENANCE_WORKER_ID, kinds: [...this.systemTasks.keys()] };
    for (;;) {
      const [job] = await this.leaseBatchAt(now, SYSTEM_SCOPE, fleet, 1);
      if (job === undefined) return;
      const fence = { workerId: MAINTENANCE_WORKER_ID, leaseGeneration: job.leaseGeneration };
      const task = this.systemTasks.get(job.kind);
      try {
        if (task === undefined) throw new Error(`no handler for ${job.kind}`);
        const summary = await task(job, now);
        await this.completeAt(now, job.jobId, fence);
        this.logger.info({ jobId: job.jobId, kind: job.kind, summary: summary ?? null }, 'system job done');
      } catch (error) {
        await this.failAt(now, job.jobId, fence, { error: error instanceof Error ? error.message : String(error) });
      }
    }
  }

  stats(): StoreStats {
    return this.store.stats();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.stopServices();
    this.closed = true;
    this.work.wakeAll();
    await this.store.close();
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

function checkFence(fence: LeaseFence): LeaseFence {
  return {
    workerId: checkWorkerId(fence.workerId),
    leaseGeneration: checkIntegerInRange('lease_generation', fence.leaseGeneration, 0, Number.MAX_SAFE_INTEGER),
  };
}

/** A tenant never learns that another tenant's job exists: out of scope reads as not found. */
function assertInScope(record: JobRecord, scope: ScopeFilter): void {
  if (!inScope(record, scope)) throw notFound(`job ${record.jobId}`);
}
