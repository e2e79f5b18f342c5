/**
 * What a worker does, whichever source it works from: the options of `WorkerRunner`, which the
 * SDK's `Worker` and the embedded `LocalWorker` extend with their source's own.
 */
import type { Clock } from '../core/clock.ts';
import type { LeaseConflictError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { JobRecord } from '../core/types.ts';
import type { JobHandler, TaskHandler } from './handler.ts';

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
