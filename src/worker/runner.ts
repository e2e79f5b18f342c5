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
import type { Logger } from '../core/logger.ts';
import type { FailOptions, JobRecord, LeaseFence, NewJob } from '../core/types.ts';
import { failureText } from './failure.ts';
import type { LeaseItem, SettleItem, WorkSession, WorkSource } from './source.ts';
import { startAttemptSpan, type AttemptSpan } from '../tracing/spans.ts';

/** Throw this from a handler to dead-letter the job at once, whatever attempts remain. */
export class PermanentError extends Error {
  override readonly name = 'PermanentError';
}

/**
 * The reason a handler's `signal` aborts when its attempt's time is up (the job's `timeoutSecs`,
 * or its kind's): the worker submits nothing for it, and the server's reaper takes the job back
 * as a timed-out attempt, retried with backoff or dead-lettered at its ceiling.
 */
export class AttemptTimeoutError extends Error {
  override readonly name = 'AttemptTimeoutError';
  constructor(readonly jobId: string) {
    super(`job ${jobId}: the attempt's time is up`);
  }
}

/** What a handler gets for one job. */
export interface JobContext {
  /** The job's id, the name records, events and the wire use. */
  readonly jobId: string;
  /** @deprecated Use `jobId`, the name records and events use; `id` goes in the next release. */
  readonly id: string;
  readonly kind: string;
  /** `null` for system-scope jobs. */
  readonly tenant: string | null;
  readonly payload: Uint8Array;
  /** Attempts consumed before this one. */
  readonly attempts: number;
  /** The last checkpoint of *this* lease; always `null` on a fresh lease. */
  readonly continuation: Uint8Array | null;
  /** The fencing token: pass it to downstream stores so they can refuse a stale writer. */
  readonly leaseGeneration: number;
  /**
   * Aborts when the lease is lost, the job is cancelled (its `reason` is then a
   * `LeaseConflictError` with reason `cancelled`), or the worker shuts down.
   */
  readonly signal: AbortSignal;
  /** Store a continuation (where to resume) and extend the lease in one call; throws `LeaseConflictError` if the lease is gone. */
  checkpoint(continuation: Uint8Array): Promise<void>;
  /**
   * Report progress for people to read (a number or a small JSON object, at most 4,096
   * characters as JSON): a heartbeat carrying it, so it extends the lease too. The job shows the
   * last value reported until it is leased again. Throws `LeaseConflictError` if the lease is gone.
   */
  progress(value: number | { readonly [key: string]: unknown }): Promise<void>;
  /** Jobs to enqueue in the same write as this job's completion (chained enqueue). */
  chain(...successors: NewJob[]): void;
  /** The fencing pair this worker holds the job under, for a completion written elsewhere (`completeInTransaction`). */
  readonly fence: LeaseFence;
  /**
   * Say that the handler's own transaction completed the job (`completeInTransaction` of
   * `telha/postgres`), so the worker sends no result of its own and stops heartbeating the
   * lease at once; what the handler returns is then not stored. Call it once that transaction
   * committed (if the handler throws after it, the job fails as usual: a failure of a job
   * already completed is refused, harmlessly). Successors go in `completeInTransaction`'s
   * options: `chain` cannot be combined with it.
   */
  completedInTransaction(): void;
  /**
   * Say that the handler's own transaction failed the job (`failInTransaction`) with `failure`,
   * the options it passed there, as `completedInTransaction` does for a completion: the worker
   * sends nothing, and reports the failure (`failed` event) as if it had sent it.
   */
  failedInTransaction(failure: FailOptions): void;
  /** The whole record as leased. */
  readonly record: JobRecord;
}

/**
 * Runs one job. What it resolves to is the job's result, stored with the completion:
 * `undefined` stores none, a `Uint8Array` is stored as it is, anything else as its JSON text
 * (UTF-8), at most `jobs.max_result_bytes` (64 KiB by default).
 */
export type JobHandler = (job: JobContext) => Promise<unknown>;

/**
 * One kind a worker serves with its own handler (`task.handle(...)` makes one from a typed
 * task): jobs of exactly this kind go to `handler`, at most `concurrency` of them at once.
 */
export interface TaskHandler {
  readonly kind: string;
  readonly handler: JobHandler;
  /** At most this many of this kind run at once (the worker's `concurrency` stays the cap). Default: no limit of its own. */
  readonly concurrency?: number;
}

/** What a worker's listeners get, by event (see `worker.on`). */
export interface WorkerEvents {
  /** The store accepted a job's completion. */
  completed: [job: JobRecord];
  /** The store accepted a job's failure: retried with backoff, or dead-lettered if `permanent`. */
  failed: [job: JobRecord, error: Error, details: { readonly permanent: boolean }];
  /** The worker lost its source (reported once per outage, as `onError` is). */
  error: [error: Error];
}

/** A listener of one {@link WorkerEvents} event. */
export type WorkerListener<E extends keyof WorkerEvents> = (...args: WorkerEvents[E]) => void;

/** What a worker does, whichever source it works from. */
export interface RunnerOptions {
  /**
   * Kind prefixes to lease; empty or omitted takes every kind but the
   * server's own `system:` kinds, which only a prefix starting with `system:`
   * takes. Omitted with `tasks` and no `handler`: the tasks' kinds.
   */
  readonly kinds?: readonly string[];
  /** Jobs run at once. Default 10. */
  readonly concurrency?: number;
  /**
   * Jobs leased ahead of free slots, waiting in this worker for one (their
   * leases heartbeated like running jobs), so the server leases the next jobs
   * while this worker runs the current ones. A number fixes it; 0 leases only
   * for free slots. Default `'auto'`: as many as keep every slot busy for
   * about 25 ms at the handlers' running average time (at most
   * max(concurrency, 100)), so short handlers never idle a slot for a round
   * trip, and none before the first handler returns or while handlers take
   * longer than 25 ms × concurrency: a prefetched job waits ~25 ms, and a
   * slow worker never sits on jobs that another worker could start.
   */
  readonly prefetch?: number | 'auto';
  /** Identifies this worker in fencing and events. Default `worker-<uuid>`. */
  readonly workerId?: string;
  /** Runs every job leased that no task of `tasks` handles. */
  readonly handler?: JobHandler;
  /**
   * Kinds with a handler each, and optionally a concurrency each; a job goes to the task of its
   * kind, else to `handler`. A job no handler takes (a kind that merely shares a task's prefix)
   * fails, to be retried with backoff, by another worker perhaps.
   *
   * A job of a task at its own concurrency waits in the worker for that task's slot, its lease
   * heartbeated, without holding one of the worker's: up to `concurrency` such jobs are leased
   * beyond the worker's slots, so other tasks keep running. A task whose backlog ahead of the
   * others is deeper than that can still fill the worker; give it a worker of its own (`kinds`).
   */
  readonly tasks?: readonly TaskHandler[];
  /**
   * Heartbeat after this fraction of the remaining lease has passed. Default 1/3:
   * a 30 s lease is extended every 10 s, so two lost beats still leave time.
   */
  readonly heartbeatFraction?: number;
  /**
   * Where the worker says what happens to it: losing and regaining its source (the server),
   * lost leases, failed handlers (info), results it could not deliver. The SDK's `Worker`
   * writes info and above to stderr unless given one; pass `silentLogger` to silence it.
   */
  readonly logger?: Logger;
  /**
   * Called when the worker loses its source (as the `error` event is), with why: once when it
   * cannot reach the server (an `unavailable` error naming the address) or a work session is
   * refused, not again for
   * each retry while the failure lasts; once more if it changes. The worker keeps retrying
   * with backoff, and logs `reconnected` when a session opens again. An error thrown here is
   * logged, never raised.
   */
  readonly onError?: (error: Error) => void;
  /** Called when a job's lease was lost (for metrics or tests). */
  readonly onLeaseLost?: (jobId: string, error: LeaseConflictError) => void;
  /** Called after the store accepted a job's completion. */
  readonly onCompleted?: (job: JobRecord) => void;
  /**
   * The time a job's lease and attempt deadlines (the server's, in µs) are held against, and the
   * worker's own waits are measured by. Default the system clock; tests pass one they move.
   */
  readonly clock?: Clock;
}

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

/** A job whose handler holds one of the `concurrency` slots. */
interface Held {
  readonly abort: LazyAbort;
  /** The task whose handler runs it, if any: it holds one of that task's slots too. */
  readonly task: TaskHandler | undefined;
  /** Give up on the handler (close timed out): abort its signal and hand its job back. */
  abandon(reason: Error): void;
}

/** A leased job waiting for a slot (prefetched). */
interface Waiting {
  readonly task: TaskHandler | undefined;
  start(): void;
  /** The worker is closing: give the job back unstarted, starting the release now. */
  release(): void;
}

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
  /** Jobs whose handler is running: each holds one of the `concurrency` slots. */
  private readonly running = new Map<string, Held>();
  /** The handlers of `tasks`, by kind. */
  private readonly tasks = new Map<string, TaskHandler>();
  /** Whether any task has a concurrency of its own (else its jobs wait only for the worker's slots). */
  private readonly taskLimits: boolean;
  /** Running jobs per task with a concurrency of its own, by kind. */
  private readonly taskRunning = new Map<string, number>();
  private readonly listeners: { [E in keyof WorkerEvents]: Set<WorkerListener<E>> } = {
    completed: new Set(),
    failed: new Set(),
    error: new Set(),
  };
  /** Leased jobs waiting for a slot (prefetched), in lease order. */
  private readonly waiting: Waiting[] = [];
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
      for (const job of this.waiting.splice(0)) job.release();
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
      for (const held of [...this.running.values()]) held.abandon(reason);
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
    return this.running.size;
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
    const held = this.running.size + this.waiting.length;
    const settling = this.inFlight.size - held;
    // Jobs waiting for their task's slot (not the worker's) hold no credit, up to `concurrency`
    // of them: else a backlog of one task could fill every slot and starve the others.
    const blocked = this.taskLimits ? this.waiting.filter((w) => !this.taskFree(w.task)).length : 0;
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
      if (this.vacate(job.jobId)) this.startWaiting();
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

  /**
   * Take a slot for a job: at once if one is free, else when one frees up.
   * `'dropped'` if the job's lease was lost first, `'released'` if the
   * worker began to close first (then `release` has been called).
   */
  private takeSlot(jobId: string, held: Held, release: () => void): Promise<'run' | 'dropped' | 'released'> {
    if (this.canStart(held.task) && !this.waiting.some((w) => this.canStart(w.task))) {
      this.occupy(jobId, held);
      return Promise.resolve('run');
    }
    return new Promise((resolve) => {
      const entry: Waiting = {
        task: held.task,
        start: () => {
          held.abort.offAbort(dropped);
          this.occupy(jobId, held);
          resolve('run');
        },
        release: () => {
          held.abort.offAbort(dropped);
          release();
          resolve('released');
        },
      };
      const dropped = (): void => {
        const at = this.waiting.indexOf(entry);
        if (at >= 0) this.waiting.splice(at, 1);
        resolve('dropped');
      };
      held.abort.onAbort(dropped);
      this.waiting.push(entry);
    });
  }

  /** Hand freed slots to prefetched jobs, oldest lease first, skipping those whose task is at its limit. */
  private startWaiting(): void {
    for (let at = 0; at < this.waiting.length && this.running.size < this.concurrency;) {
      const next = this.waiting[at] as Waiting;
      if (!this.taskFree(next.task)) {
        at++;
        continue;
      }
      this.waiting.splice(at, 1);
      next.start();
    }
  }

  /** Whether the task (if any) has a slot of its own free. */
  private taskFree(task: TaskHandler | undefined): boolean {
    return task?.concurrency === undefined || (this.taskRunning.get(task.kind) ?? 0) < task.concurrency;
  }

  private canStart(task: TaskHandler | undefined): boolean {
    return this.running.size < this.concurrency && this.taskFree(task);
  }

  private occupy(jobId: string, held: Held): void {
    this.running.set(jobId, held);
    if (held.task?.concurrency !== undefined)
      this.taskRunning.set(held.task.kind, (this.taskRunning.get(held.task.kind) ?? 0) + 1);
  }

  /** Free a running job's slots (the worker's and its task's); `false` if it held none. */
  private vacate(jobId: string): boolean {
    const held = this.running.get(jobId);
    if (held === undefined) return false;
    this.running.delete(jobId);
    if (held.task?.concurrency !== undefined)
      this.taskRunning.set(held.task.kind, (this.taskRunning.get(held.task.kind) ?? 1) - 1);
    return true;
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
    const slot = await this.takeSlot(job.jobId, held, () => void release());
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
