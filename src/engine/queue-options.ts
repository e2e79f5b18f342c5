/**
 * What a `Queue`'s calls take and give besides records: the options of each call (lease,
 * complete, fail, list, cancel, pauses, kind limits) and of opening one. Apart from `queue.ts`
 * so that the class reads as its operations.
 */
import type { Clock } from '../core/clock.ts';
import type { TelhaConfig } from '../core/config.ts';
import type { ListOrder } from '../core/list-order.ts';
import type { Logger } from '../core/logger.ts';
import type { PauseScope } from '../core/pauses.ts';
import type { Rate } from '../core/rate.ts';
import type { CompleteOptions, FailOptions, JobState, LeaseFence, ScopeFilter } from '../core/types.ts';
import type { JobStore } from '../storage/types.ts';
import type { WakeReason } from './work-signal.ts';

/**
 * The options of complete and fail, and what a completion answers, are the queue's meaning:
 * `core/types.ts` holds them, for the PostgreSQL store's transactional calls too.
 */
export type { CompleteOptions, CompleteResult, FailOptions } from '../core/types.ts';

export interface LeaseOptions {
  readonly workerId: string;
  /**
   * Kind prefixes to accept; omitted or empty accepts every kind but the
   * server's own `system:` kinds, which only a prefix starting with `system:`
   * accepts.
   */
  readonly kinds?: readonly string[];
  /** Where to lease from. Default: every scope, system jobs first (the worker fleet's view). */
  readonly scope?: ScopeFilter;
}

export interface LeaseManyOptions extends LeaseOptions {
  /** Jobs at most, 1-1,000. Default 1. */
  readonly limit?: number;
  /** When nothing is ready, wait up to this long for a job (long poll). Default 0. */
  readonly waitMs?: number;
  /** Ends a wait early, with `[]`. */
  readonly signal?: AbortSignal;
}

export interface HeartbeatOptions {
  /**
   * Progress for people to read (JSON text, at most 4,096 characters), stored in the same fenced
   * write; the job shows the last one reported until it is leased again.
   */
  readonly progress?: string;
}

/** One completion in {@link Queue.completeEach}. */
export interface Completion extends CompleteOptions {
  readonly jobId: string;
  readonly fence: LeaseFence;
}

/** One failure in {@link Queue.failEach}. */
export interface Failure extends FailOptions {
  readonly jobId: string;
  readonly fence: LeaseFence;
}

/** One job handed back in {@link Queue.releaseEach}. */
export interface Release {
  readonly jobId: string;
  readonly fence: LeaseFence;
}

export interface ListOptions {
  /** Default: every scope. */
  readonly scope?: ScopeFilter;
  readonly state?: JobState;
  readonly kindPrefix?: string;
  /** Default 100, at most 1,000. */
  readonly limit?: number;
  /** The previous page's `nextPageToken`. */
  readonly pageToken?: string;
  /** Default `newest_first`: by `created_at`, then job id (`core/list-order.ts`). */
  readonly order?: ListOrder;
  /**
   * With every scope: whether the system scope's own jobs (`system:prune`, one a minute) are
   * listed too. Default: only when `kindPrefix` asks for `system:` kinds, as a lease filter does.
   */
  readonly includeSystem?: boolean;
}

export interface CancelOptions {
  /** Why, kept (cut to 1,024 characters) in the job's `cancelled` event. */
  readonly reason?: string;
  /** Who asked (`operator`, `tenant:acme`), kept in the event; the server fills it in from the caller's token. */
  readonly by?: string;
}

export interface RunNowOptions {
  /** Who asked (`operator`, `tenant:acme`), kept in the job's `run_now` event; the server fills it in from the caller's token. */
  readonly by?: string;
}

export interface CancelMatchingOptions extends CancelOptions {
  /** Default: every scope. */
  readonly scope?: ScopeFilter;
  /** Pending, Leased, or both (the default). */
  readonly states?: readonly JobState[];
  /** Only kinds starting with this prefix; default every kind. */
  readonly kindPrefix?: string;
  /** Cancel at most this many jobs; default every match. */
  readonly limit?: number;
}

export interface LeasedOptions {
  /** Only this worker's leases. */
  readonly workerId?: string;
  /** Default: every scope. */
  readonly scope?: ScopeFilter;
  /** Default and maximum 1,000. */
  readonly limit?: number;
}

export interface ScheduleListOptions {
  /** Default: every scope. */
  readonly scope?: ScopeFilter;
  /** Default 100, at most 1,000. */
  readonly limit?: number;
  /** The previous page's `nextPageToken`. */
  readonly pageToken?: string;
}

export interface PauseOptions {
  /** Jobs whose kind starts with this are held back (a `system:` kind only by a `system:` prefix). */
  readonly kindPrefix: string;
  /** One scope, or `'everywhere'` (an operator's). */
  readonly scope: PauseScope;
  /** Who pauses, for operators reading the list. Default `local`. */
  readonly by?: string;
}

export interface ResumeOptions {
  readonly kindPrefix: string;
  readonly scope: PauseScope;
}

export interface SetKindLimitOptions {
  /** Jobs whose kind starts with this (a `system:` kind only by a `system:` prefix); the longest limit prefix of a kind applies. */
  readonly kindPrefix: string;
  /** At most this many leased at once (1-1,000,000); omitted or `null` for no bound. */
  readonly concurrency?: number | null;
  /** At most this many leases per period: `"100/s"`, `"10/1m"`, or `{ count, periodMs }`; omitted or `null` for no bound. */
  readonly rate?: Rate | string | null;
  /** Who sets it, for operators reading the list. Default `local`. */
  readonly by?: string;
}

export interface SetTenantLimitOptions {
  /** The tenant whose jobs it limits (every kind of them; system jobs have no tenant). */
  readonly tenant: string;
  /** At most this many of its jobs leased at once (1-1,000,000); omitted or `null` for no bound. */
  readonly concurrency?: number | null;
  /** At most this many of its leases per period: `"100/s"`, `"10/1m"`, or `{ count, periodMs }`; omitted or `null` for no bound. */
  readonly rate?: Rate | string | null;
  /** Its share of the fleet's fair order (1-1,000; default 1): weight 4 is served 4 times as often as weight 1. */
  readonly weight?: number;
  /** Who sets it, for operators reading the list. Default `local`. */
  readonly by?: string;
}

/** Lease long-polls: how many are parked now, and how the finished ones ended. */
export interface LeaseWaits {
  readonly parked: number;
  readonly ended: Readonly<Record<WakeReason, number>>;
}

export interface QueueOptions {
  readonly store: JobStore;
  readonly config?: TelhaConfig;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Run the reaper, the maintenance runner and the scheduler on timers. Default `true`. */
  readonly services?: boolean;
}
