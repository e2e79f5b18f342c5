/**
 * The worker loop: on one work session the source pushes jobs of the
 * worker's kind prefixes as slots free up; the worker runs an async handler
 * per job under a concurrency limit, heartbeats well before the lease
 * expires, and sends each result, with the lease's fencing token, back on
 * the session. Through the server the session is the gRPC Work stream; in
 * process it calls the queue directly.
 *
 * - Handler resolves: the job is completed.
 * - Handler called `completedInTransaction()` (or `failedInTransaction(failure)`) and resolves:
 *   its own transaction completed (or failed) the job (`completeInTransaction` of
 *   `telha/postgres`); the worker sends nothing and stops heartbeating.
 * - Handler throws: the job fails and is retried with backoff.
 * - Handler throws {@link PermanentError}: the job fails permanently (Dead).
 * - The handler's `signal` aborts when the lease is lost (a heartbeat or
 *   checkpoint came back ABORTED) or when `close()` gives up on it; a late
 *   result is then not submitted as if the lease were still held: the store
 *   would reject it anyway. A job cancelled while it runs is such a loss:
 *   `signal.reason` is the `LeaseConflictError` with reason `cancelled`, and
 *   the job is neither completed nor failed.
 * - `close()` hands back the jobs it holds but has not started (released:
 *   Pending at once, no attempt charged), so a worker that stops right after
 *   it started strands nothing.
 */
import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../core/clock.ts';
import { ErrorCode, isTelhaError, isTransient, LeaseConflictError, TelhaError } from '../core/errors.ts';
import { LazyAbort } from '../util/lazy-abort.ts';
import { MAX_TIMER_MS, MAX_WORK_CREDIT } from '../core/bounds.ts';
import { progressText, resultBytes } from '../core/results.ts';
import type { FailOptions, JobRecord, LeaseFence, NewJob } from '../core/types.ts';
import { failureText } from './failure.ts';
import type { LeaseItem, SettleItem, WorkSession, WorkSource } from './source.ts';
import {
  AttemptTimeoutError,
  PermanentError,
  type JobContext,
  type TaskHandler,
  type WorkerEvents,
  type WorkerListener,
} from './handler.ts';
import type { RunnerOptions } from './options.ts';
import { Slots, type Held } from './slots.ts';
import { startAttemptSpan, type AttemptSpan } from '../tracing/spans.ts';

export {
  AttemptTimeoutError,
  PermanentError,
  type JobContext,
  type JobHandler,
  type TaskHandler,
  type WorkerEvents,
  type WorkerListener,
} from './handler.ts';
export type { RunnerOptions } from './options.ts';

/** Why `chain` and a job settled in the handler's transaction do not mix: the worker sends no completion to carry the successors. */
const SUCCESSORS_IN_TRANSACTION =
  "a job completed in the handler's transaction takes its successors there: pass them to completeInTransaction";
const MIN_HEARTBEAT_MS = 50;
/** `prefetch: 'auto'` leases about this much work (ms of handler time per slot) ahead. */
const AUTO_PREFETCH_AHEAD_MS = 25;
/** ... and never more than this many jobs (or `concurrency`, if larger). */
const AUTO_PREFETCH_MAX = 100;
/** Weight of the newest handler time in the running average. */
const HANDLER_MS_WEIGHT = 0.2;
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;
/**
 * The pause after the server refused the worker's token: it stays refused until someone changes
 * the token or the server's list, so the worker asks again every half minute, not every 5 s.
 */
const REFUSED_RETRY_MS = 30_000;
/** How long `waitForReady()` waits by default. */
const READY_TIMEOUT_MS = 30_000;

/** How a handler ended: with its result as bytes (`undefined` for none), or with an error. */
type HandlerOutcome =
  { readonly ok: true; readonly result: Uint8Array | undefined } | { readonly ok: false; readonly error: unknown };

/**
 * The worker loop over any `WorkSource`: the SDK's `Worker` (gRPC to
 * `telha serve`) and the embedded `LocalWorker` (a `Queue` in this process)
 * are this class with their source.
 */
export class WorkerRunner {
  readonly workerId: string;
  private readonly options: RunnerOptions;
  private readonly concurrency: number;
  private readonly prefetch: number | 'auto';
  /** Running average of handler time (ms), for `prefetch: 'auto'`; `null` before the first handler returns. */
  private handlerMs: number | null = null;
  /** The `concurrency` slots, the tasks' own, and the jobs waiting for them. */
  private readonly slots: Slots;
  /** The handlers of `tasks`, by kind. */
  private readonly tasks = new Map<string, TaskHandler>();
  /** Whether any task has a concurrency of its own (else its jobs wait only for the worker's slots). */
  private readonly taskLimits: boolean;
  private readonly listeners: { [E in keyof WorkerEvents]: Set<WorkerListener<E>> } = {
    completed: new Set(),
    failed: new Set(),
    error: new Set(),
  };
  /** Every job from lease until its result is settled (handler running, or result on its way). */
  private readonly inFlight = new Set<Promise<void>>();
  private readonly stopLeasing = new AbortController();
  private loop: Promise<void> | null = null;
  /** The open work session, if any; results go through the source's own calls when there is none. */
  private channel: WorkSession | null = null;
  /** Credit granted on the current session and not yet used by the source. */
  private granted = 0;
  /** Whether the current session has been accepted by the source. */
  private sessionOpen = false;
  /** The failure last reported (logged and passed to `onError`), until a session opens again. */
  private reported: Error | null = null;
  /** The latest session failure, for what `waitForReady()` says when it gives up. */
  private lastFailure: Error | null = null;
  /** Callers of `waitForReady()` waiting for a session to open. */
  private readonly readyWaiters = new Set<{ resolve(): void; reject(error: Error): void }>();
  /** Completions, failures and hand-backs (releases) the store accepted, and leases lost, since start. */
  readonly stats = { completed: 0, failed: 0, released: 0, leaseLost: 0 };
  private readonly clock: Clock;

  constructor(
    private readonly source: WorkSource,
    options: RunnerOptions,
  ) {
    for (const task of options.tasks ?? []) {
      if (this.tasks.has(task.kind)) throw new RangeError(`two tasks of kind ${task.kind}`);
      if (task.concurrency !== undefined && (!Number.isInteger(task.concurrency) || task.concurrency < 1))
        throw new RangeError(`task ${task.kind}: concurrency must be a positive integer`);
      this.tasks.set(task.kind, task);
    }
    if (options.handler === undefined && this.tasks.size === 0)
      throw new TypeError('a worker needs a handler, or tasks with a handler each');
    this.taskLimits = [...this.tasks.values()].some((task) => task.concurrency !== undefined);
    // Without a catch-all handler, lease only what the tasks handle.
    this.options =
      options.kinds === undefined && options.handler === undefined
        ? { ...options, kinds: [...this.tasks.keys()] }
        : options;
    this.workerId = options.workerId ?? `worker-${randomUUID()}`;
    this.clock = options.clock ?? systemClock;
    this.concurrency = options.concurrency ?? 10;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1)
      throw new RangeError('concurrency must be a positive integer');
    this.prefetch = options.prefetch ?? 'auto';
    if (this.prefetch !== 'auto' && (!Number.isInteger(this.prefetch) || this.prefetch < 0))
      throw new RangeError("prefetch must be a non-negative integer or 'auto'");
    this.slots = new Slots(this.concurrency);
  }

  /**
   * Listen to an event: `completed` and `failed` (each result the store accepted) and `error`
   * (the worker lost its source). A listener that throws is logged, never raised.
   */
  on<E extends keyof WorkerEvents>(event: E, listener: WorkerListener<E>): this {
    this.listeners[event].add(listener);
    return this;
  }

  /** Stop listening. */
  off<E extends keyof WorkerEvents>(event: E, listener: WorkerListener<E>): this {
    this.listeners[event].delete(listener);
    return this;
  }

  private emit<E extends keyof WorkerEvents>(event: E, ...args: WorkerEvents[E]): void {
    for (const listener of this.listeners[event]) {
      try {
        listener(...args);
      } catch (thrown) {
        this.options.logger?.error({ workerId: this.workerId, event, err: String(thrown) }, 'a listener threw');
      }
    }
  }

  /**
   * Resolves once a work session is open: the server has accepted this worker's stream (in
   * process, at once). Rejects with an `unavailable` error naming the source and the last
   * failure if none opens within `timeoutMs` (default 30 s), or if the worker closes first.
   */
  waitForReady(options: { readonly timeoutMs?: number } = {}): Promise<void> {
    if (this.sessionOpen) return Promise.resolve();
    if (this.stopLeasing.signal.aborted) return Promise.reject(this.closedBefore());
    const timeoutMs = options.timeoutMs ?? READY_TIMEOUT_MS;
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (error: Error) => {
          clearTimeout(timer);
          this.readyWaiters.delete(waiter);
          reject(error);
        },
      };
      const timer = setTimeout(
        () => {
          const why =
            this.loop === null
              ? ': the worker is not started'
              : this.lastFailure === null
                ? ''
                : `: ${this.lastFailure.message}`;
          waiter.reject(
            new TelhaError(ErrorCode.Unavailable, `cannot reach ${this.source.name} within ${timeoutMs} ms${why}`),
          );
        },
        Math.min(timeoutMs, MAX_TIMER_MS),
      );
      this.readyWaiters.add(waiter);
    });
  }

  private closedBefore(): TelhaError {
    return new TelhaError(ErrorCode.Unavailable, `the worker closed before reaching ${this.source.name}`);
  }

  /** Start leasing. Idempotent. */
  start(): this {
    this.loop ??= this.sessionLoop();
    return this;
  }

  /**
   * Stop leasing and hand back at once the jobs this worker holds but has not
   * started (prefetched, or pushed to it while it closes): each is released,
   * Pending again with no attempt charged, for another worker to take now.
   * Then wait up to `timeoutMs` (default 30 s) for the running handlers and
   * their results. A handler still running then is abandoned: its signal
   * aborts, its job is released too, and what it returns later is not
   * submitted. Resolves once every result and release is answered. A release
   * that cannot be delivered (the server is away) leaves the lease to expire,
   * and the reaper hands the job on, as before.
   */
  async close(timeoutMs = 30_000): Promise<void> {
    const deadline = this.nowMs() + timeoutMs;
    if (!this.stopLeasing.signal.aborted) {
      // Before the session ends, so these releases go out on it, in its last message.
      this.slots.releaseWaiting();
      // Ends the work session: the source stops leasing, answers the results it has, and ends it.
      this.stopLeasing.abort();
    }
    for (const waiter of [...this.readyWaiters]) waiter.reject(this.closedBefore());
    const timedOut = (promise: Promise<unknown>): Promise<boolean> =>
      Promise.race([
        promise.then(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(true), deadline - this.nowMs()).unref()),
      ]);
    if (this.loop !== null && (await timedOut(this.loop))) this.channel?.cancel();
    await this.loop;
    if (await timedOut(Promise.all([...this.inFlight]))) {
      const reason = new Error('worker shutting down');
      this.slots.abandonRunning(reason);
    }
    // An abandoned job is done once its release is answered, whether or not its handler ever returns.
    await Promise.all([...this.inFlight]);
    this.source.close();
  }

  /** The clock's time in milliseconds, the unit of timers. */
  private nowMs(): number {
    return this.clock.now() / 1000;
  }

  get active(): number {
    return this.slots.running;
  }

  /** One work session after another, reconnecting with jittered backoff while the source is away. */
  private async sessionLoop(): Promise<void> {
    let backoff = RECONNECT_MIN_MS;
    while (!this.stopLeasing.signal.aborted) {
      const started = this.nowMs();
      const { error, received } = await this.session();
      if (this.stopLeasing.signal.aborted) return;
      if (received || this.nowMs() - started >= RECONNECT_MAX_MS) backoff = RECONNECT_MIN_MS;
      // The server is away, restarting or shutting down: wait, then open a new session.
      const pause = (refusedToken(error) ? REFUSED_RETRY_MS : backoff) * (0.5 + Math.random() / 2);
      if (error !== null) this.sessionFailed(error, pause);
      await sleep(pause, this.stopLeasing.signal);
      backoff = Math.min(RECONNECT_MAX_MS, backoff * 2);
    }
  }

  /**
   * Say that a session failed: every time at debug level, and through the logger and `onError`
   * only when this is news (the first failure since the last open session, or a different one),
   * so an outage of many retries is reported once.
   */
  private sessionFailed(error: Error, retryInMs: number): void {
    const { logger, onError } = this.options;
    const fields = { workerId: this.workerId, source: this.source.name, err: error.message };
    logger?.debug({ ...fields, retryInMs: Math.round(retryInMs) }, 'work session failed; retrying');
    const unreachable = isTelhaError(error, ErrorCode.Unavailable);
    const reportable = unreachable
      ? new TelhaError(ErrorCode.Unavailable, `cannot reach ${this.source.name}: ${error.message}`, { cause: error })
      : error;
    this.lastFailure = reportable;
    if (this.reported !== null && codeOf(this.reported) === codeOf(error)) return;
    this.reported = reportable;
    if (unreachable) logger?.warn(fields, `cannot reach ${this.source.name}; retrying until it answers`);
    else if (refusedToken(error)) {
      logger?.error(
        fields,
        `${this.source.name} refused this worker's token (${error.code}): check its token; retrying every ${REFUSED_RETRY_MS / 1000} s`,
      );
    } else if (isTransient(error)) logger?.warn(fields, 'work session refused; retrying');
    else logger?.error(fields, 'work session failed; retrying');
    try {
      onError?.(reportable);
    } catch (thrown) {
      logger?.error({ workerId: this.workerId, err: String(thrown) }, 'onError threw');
    }
    this.emit('error', reportable);
  }

  /** A session was accepted: say so if a failure was reported, and wake `waitForReady()`. */
  private sessionOpened(): void {
    this.sessionOpen = true;
    this.lastFailure = null;
    if (this.reported !== null) {
      this.options.logger?.info(
        { workerId: this.workerId, source: this.source.name },
        `reconnected to ${this.source.name}`,
      );
      this.reported = null;
    }
    for (const waiter of this.readyWaiters) waiter.resolve();
    this.readyWaiters.clear();
  }

  /** One work session, until it ends: jobs pushed as credit allows, results settled on it. */
  private session(): Promise<{ error: Error | null; received: boolean }> {
    return new Promise((resolve) => {
      let received = false;
      const stop = (): void => channel.end();
      const channel = this.source.open(
        { workerId: this.workerId, ...(this.options.kinds ? { kinds: this.options.kinds } : {}) },
        {
          onOpen: () => this.sessionOpened(),
          onJobs: (jobs) => {
            received = true;
            this.granted = Math.max(0, this.granted - jobs.length);
            for (const job of jobs) this.run(job);
            // A job that waits for its task's slot holds none of the worker's: lease another.
            if (this.taskLimits) this.grantFreeSlots();
          },
          onEnd: (error) => {
            this.stopLeasing.signal.removeEventListener('abort', stop);
            this.sessionOpen = false;
            this.channel = null;
            this.granted = 0;
            resolve({ error, received });
          },
        },
      );
      this.channel = channel;
      this.granted = 0;
      this.stopLeasing.signal.addEventListener('abort', stop, { once: true });
      this.grantFreeSlots();
    });
  }

  /**
   * Tell the source how many more jobs it may push. A slot frees when its handler
   * returns, so the next job overlaps the result's round trip; only a backlog of
   * more than `concurrency` unsettled results holds leasing back.
   */
  private grantFreeSlots(): void {
    const channel = this.channel;
    if (channel === null || !channel.writable || this.stopLeasing.signal.aborted) return;
    const held = this.slots.running + this.slots.waiting;
    const settling = this.inFlight.size - held;
    // Jobs waiting for their task's slot (not the worker's) hold no credit, up to `concurrency`
    // of them: else a backlog of one task could fill every slot and starve the others.
    const blocked = this.taskLimits ? this.slots.blocked() : 0;
    const counted = held - Math.min(blocked, this.concurrency);
    const wanted = this.concurrency + this.prefetchNow() - counted - Math.max(0, settling - this.concurrency);
    // A worker of huge concurrency still never holds more unused credit than a session allows.
    const free = Math.min(wanted, MAX_WORK_CREDIT) - this.granted;
    if (free <= 0) return;
    this.granted += free;
    channel.grant(free);
  }

  private run(job: JobRecord): void {
    const abort = new LazyAbort();
    let freed = false;
    const freeSlot = (): void => {
      if (freed) return;
      freed = true;
      if (this.slots.vacate(job.jobId)) this.slots.startWaiting();
      this.grantFreeSlots();
    };
    const done: Promise<void> = this.execute(job, abort, freeSlot).finally(() => {
      freeSlot();
      this.inFlight.delete(done);
      this.grantFreeSlots();
    });
    this.inFlight.add(done);
  }

  private prefetchNow(): number {
    if (this.prefetch !== 'auto') return this.prefetch;
    if (this.handlerMs === null) return 0;
    const ahead = Math.floor((this.concurrency * AUTO_PREFETCH_AHEAD_MS) / Math.max(this.handlerMs, 0.001));
    return Math.min(ahead, Math.max(this.concurrency, AUTO_PREFETCH_MAX));
  }

  /** Count and tell of a job the store accepted the completion of. */
  private completed(job: JobRecord): void {
    this.stats.completed++;
    this.options.onCompleted?.(job);
    this.emit('completed', job);
  }

  /** Count, trace and tell of a job the store accepted the failure of. */
  private failed(job: JobRecord, error: Error, permanent: boolean, attempt: AttemptSpan, log: object): void {
    attempt.end(permanent ? 'dead' : 'failed', error);
    this.stats.failed++;
    this.emit('failed', job, error, { permanent });
    this.options.logger?.info({ ...log, permanent, err: error.message }, 'handler failed');
  }

  /** A result goes on the work session while it is open, else through the source's own call. */
  private settle(item: SettleItem): Promise<void> {
    const channel = this.channel;
    return channel !== null && channel.writable ? channel.settle(item) : this.source.settle(item);
  }

  /**
   * A heartbeat or checkpoint goes on the work session while it is open and carries them (a
   * message, where a call each cost far more), else through the source's own call; also when the
   * session ended before answering it, since extending a lease twice does no harm.
   */
  private async extend(item: LeaseItem): Promise<number> {
    const channel = this.channel;
    if (channel?.extend !== undefined && channel.writable) {
      try {
        return await channel.extend(item);
      } catch (error) {
        if (!(error instanceof TelhaError && error.code === ErrorCode.Unavailable)) throw error;
      }
    }
    return item.type === 'heartbeat'
      ? this.source.heartbeat(item.jobId, item.fence, item.progress)
      : this.source.checkpoint(item.jobId, item.fence, item.continuation);
  }

  /**
   * Give a job back to the store unfinished (released: Pending at once, no
   * attempt charged). Never rejects: a job no longer held needs no hand-back,
   * and one the store cannot be told about keeps its lease until it expires.
   */
  private async releaseJob(job: JobRecord, fence: LeaseFence, log: object): Promise<void> {
    try {
      await this.settle({ type: 'release', jobId: job.jobId, fence });
      this.stats.released++;
    } catch (error) {
      if (error instanceof LeaseConflictError) return;
      this.options.logger?.warn({ ...log, err: String(error) }, 'could not hand the job back; its lease will expire');
    }
  }

  /** The handler's outcome; never rejects, even for a handler that throws before it returns a promise. */
  private async runHandler(context: JobContext): Promise<HandlerOutcome> {
    try {
      const handler = this.tasks.get(context.kind)?.handler ?? this.options.handler;
      if (handler === undefined) throw new Error(`no handler in worker ${this.workerId} for kind ${context.kind}`);
      const value = await handler(context);
      return { ok: true, result: resultBytes(value) };
    } catch (error) {
      return { ok: false, error };
    }
  }

  /**
   * Heartbeat the lease, wait for a slot, run the handler, free its slot,
   * then settle the result. A job that arrives while the worker closes, or
   * still waits for a slot when it does, or whose handler `close()` gives up
   * on, is handed back instead.
   */
  private async execute(job: JobRecord, abort: LazyAbort, freeSlot: () => void): Promise<void> {
    const fence: LeaseFence = { workerId: this.workerId, leaseGeneration: job.leaseGeneration };
    const log = { jobId: job.jobId, kind: job.kind, tenant: job.tenant, workerId: this.workerId };
    let timer: NodeJS.Timeout | null = null;
    /**
     * Cleared, with the timer, once this attempt stops holding its lease here (its handler
     * returned, it is on its way back, or its transaction settled it). A heartbeat still out then
     * schedules no next one: one that kept beating after its job was done (its failures look
     * transient while the server is away) kept a closed worker's process alive.
     */
    let heartbeating = true;
    const stopHeartbeats = (): void => {
      heartbeating = false;
      if (timer !== null) clearTimeout(timer);
    };
    /** Aborts the handler when the attempt's time is up (only for a job with a timeout). */
    let timeUp: NodeJS.Timeout | null = null;
    /** Set once the job is on its way back: no more heartbeats, and no result. */
    let releasing: Promise<void> | null = null;
    /** Set once the handler said its own transaction settled the job (how): no more heartbeats, and no result. */
    let settledElsewhere: { readonly failure: FailOptions | null } | null = null;
    const settledInTransaction = (failure: FailOptions | null): void => {
      if (successors.length > 0) throw new TypeError(SUCCESSORS_IN_TRANSACTION);
      settledElsewhere = { failure };
      stopHeartbeats();
    };
    const release = (): Promise<void> => {
      stopHeartbeats();
      if (timeUp !== null) clearTimeout(timeUp);
      releasing ??= this.releaseJob(job, fence, log);
      return releasing;
    };
    // Pushed while the worker closes: never started, so straight back.
    if (this.stopLeasing.signal.aborted) return release();

    const lost = (error: unknown): boolean => {
      if (!(error instanceof LeaseConflictError)) return false;
      // Released by this worker, or completed in the handler's transaction: a heartbeat that
      // crossed the release or the commit is no lost lease.
      if (releasing !== null || settledElsewhere !== null) return true;
      this.stats.leaseLost++;
      this.options.onLeaseLost?.(job.jobId, error);
      // A cancel is someone's decision, not a fault of this worker: worth a note, not a warning.
      if (error.reason === 'cancelled') this.options.logger?.info(log, 'job cancelled; aborting its handler');
      else this.options.logger?.warn({ ...log, reason: error.reason }, 'lease lost');
      abort.abort(error);
      return true;
    };
    let deadline = job.leaseDeadline ?? this.clock.now();
    // The lease can be extended only up to the attempt deadline; past it the handler is told to
    // stop, with no heartbeat left to send and nothing to submit.
    timeUp =
      job.attemptDeadline === null
        ? null
        : setTimeout(
            () => abort.abort(new AttemptTimeoutError(job.jobId)),
            Math.min(MAX_TIMER_MS, Math.max(0, job.attemptDeadline / 1000 - this.nowMs())),
          );
    const fraction = this.options.heartbeatFraction ?? 1 / 3;
    let intervalMs = 0;
    const scheduleHeartbeat = (): void => {
      // A lease capped at the attempt deadline cannot grow: beat at the pace set so far (which
      // still tells the handler of a lost lease) rather than ever faster as the deadline nears.
      if (intervalMs === 0 || deadline !== job.attemptDeadline) {
        const remainingMs = deadline / 1000 - this.nowMs();
        // A lease of more than ~74 days would be beyond Node's longest timer, which fires at once instead.
        intervalMs = Math.min(MAX_TIMER_MS, Math.max(MIN_HEARTBEAT_MS, remainingMs * fraction));
      }
      timer = setTimeout(() => void beat(), intervalMs);
    };
    const beat = async (): Promise<void> => {
      if (!heartbeating || abort.aborted) return;
      try {
        deadline = await this.extend({ type: 'heartbeat', jobId: job.jobId, fence });
      } catch (error) {
        // The attempt ended while this heartbeat was out: what it says of the lease no longer matters.
        if (!heartbeating || lost(error)) return;
        // A transient failure: try again soon, well before the deadline.
      }
      if (heartbeating && !abort.aborted) scheduleHeartbeat();
    };
    // From the lease on, whether the job runs at once or waits for a slot.
    scheduleHeartbeat();
    let abandon: () => void = () => {};
    const abandoned = new Promise<null>((resolve) => (abandon = () => resolve(null)));
    const held: Held = {
      abort,
      task: this.tasks.get(job.kind),
      abandon: (reason) => {
        abort.abort(reason);
        abandon();
      },
    };
    const slot = await this.slots.take(job.jobId, held, () => void release());
    if (slot === 'released') return release();
    if (slot === 'dropped') {
      stopHeartbeats();
      if (timeUp !== null) clearTimeout(timeUp);
      return;
    }

    const successors: NewJob[] = [];
    // From here the attempt runs: its span ends with how it ended, whichever way that is.
    const attempt = startAttemptSpan(job, this.workerId);
    const context: JobContext = {
      jobId: job.jobId,
      id: job.jobId,
      kind: job.kind,
      tenant: job.tenant,
      payload: job.payload,
      attempts: job.attempts,
      continuation: job.continuation,
      leaseGeneration: job.leaseGeneration,
      get signal() {
        return abort.signal;
      },
      record: job,
      checkpoint: async (continuation) => {
        try {
          deadline = await this.extend({ type: 'checkpoint', jobId: job.jobId, fence, continuation });
        } catch (error) {
          lost(error);
          throw error;
        }
      },
      progress: async (value) => {
        const progress = progressText(value);
        try {
          deadline = await this.extend({ type: 'heartbeat', jobId: job.jobId, fence, progress });
        } catch (error) {
          lost(error);
          throw error;
        }
      },
      chain: (...next) => {
        if (settledElsewhere !== null) throw new TypeError(SUCCESSORS_IN_TRANSACTION);
        successors.push(...next);
      },
      fence,
      completedInTransaction: () => settledInTransaction(null),
      failedInTransaction: (failure) => settledInTransaction(failure),
    };

    try {
      const started = performance.now();
      const outcome = await Promise.race([attempt.run(() => this.runHandler(context)), abandoned]);
      if (outcome === null) {
        // Given up on at the close timeout: the job goes back now; what the handler returns later is dropped.
        attempt.end('released');
        freeSlot();
        await release();
        return;
      }
      const took = performance.now() - started;
      this.handlerMs = this.handlerMs === null ? took : this.handlerMs + HANDLER_MS_WEIGHT * (took - this.handlerMs);
      stopHeartbeats();
      freeSlot();
      if (
        abort.aborted &&
        (abort.reason instanceof LeaseConflictError || abort.reason instanceof AttemptTimeoutError)
      ) {
        if (abort.reason instanceof AttemptTimeoutError) {
          this.options.logger?.warn(log, "attempt timed out; the server's reaper takes the job back");
        }
        attempt.end(abort.reason instanceof AttemptTimeoutError ? 'timed_out' : 'lease_lost', abort.reason);
        return;
      }
      let failed: { readonly error: unknown } | null = outcome.ok ? null : { error: outcome.error };
      // Set by the handler's context, which the compiler does not see run.
      const elsewhere = settledElsewhere as { readonly failure: FailOptions | null } | null;
      if (outcome.ok && elsewhere !== null) {
        // The handler's transaction wrote the outcome; the server has it already.
        if (elsewhere.failure === null) {
          attempt.end('completed');
          this.completed(job);
        } else {
          const { error, permanent } = elsewhere.failure;
          this.failed(job, new Error(error), permanent ?? false, attempt, log);
        }
      } else if (outcome.ok) {
        const { result } = outcome;
        try {
          await this.settle({
            type: 'complete',
            jobId: job.jobId,
            fence,
            successors: attempt.stamp(successors),
            ...(result === undefined ? {} : { result }),
          });
          attempt.end('completed');
          this.completed(job);
        } catch (error) {
          // The completion itself was refused (a result over jobs.max_result_bytes, a bad
          // successor): nothing was written and the lease is still held, so the attempt fails
          // with the reason in its trail rather than waiting out its lease in silence.
          if (!isTelhaError(error, ErrorCode.InvalidArgument)) throw error;
          failed = { error };
        }
      }
      if (failed !== null) {
        const permanent = failed.error instanceof PermanentError;
        const message = failed.error instanceof Error ? failed.error.message : String(failed.error);
        await this.settle({ type: 'fail', jobId: job.jobId, fence, error: failureText(failed.error), permanent });
        this.failed(job, failed.error instanceof Error ? failed.error : new Error(message), permanent, attempt, log);
      }
    } catch (error) {
      attempt.end(error instanceof LeaseConflictError ? 'lease_lost' : 'unsubmitted', error);
      if (lost(error)) return;
      if (isTelhaError(error, ErrorCode.Unavailable) || isTransient(error)) {
        // The result could not be delivered; the lease will expire and the job run again.
        this.options.logger?.warn({ ...log, err: String(error) }, 'could not submit result; the job will be retried');
        return;
      }
      this.options.logger?.error({ ...log, err: String(error) }, 'submitting the result failed');
    } finally {
      stopHeartbeats();
      if (timeUp !== null) clearTimeout(timeUp);
      // Every way out above ends the span with its outcome; this only keeps a new one from leaking it.
      attempt.end('ended');
    }
  }
}

/** What tells one failure from another in reporting: the error code, or the message for a foreign error. */
/** The server refused the caller's token: unknown (`unauthenticated`), or without the right (`permission_denied`). */
function refusedToken(error: Error | null): error is TelhaError {
  return isTelhaError(error, ErrorCode.Unauthenticated) || isTelhaError(error, ErrorCode.PermissionDenied);
}

function codeOf(error: Error): string {
  return error instanceof TelhaError ? error.code : error.message;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
