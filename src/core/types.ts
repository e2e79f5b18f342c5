/**
 * The queue's data model: job states, the stored record and its audit trail.
 *
 * The codec writes the fields in snake_case (docs/design.md lists them), so
 * the stored bytes read the same to a reader in any language.
 */

/** Microseconds since the Unix epoch. Fits a double exactly until the year 2255. */
export type Micros = number;

/**
 * A job's state. The numeric value is the state byte of the job's key, so the
 * order here is the order a scan of one scope meets them: Pending first.
 */
export const JobState = {
  /** Ready to lease, subject to the `notBefore` backoff gate. */
  Pending: 0x00,
  /** Owned by a worker until `leaseDeadline`. */
  Leased: 0x01,
  /** Finished successfully. Terminal. */
  Completed: 0x02,
  /**
   * Reserved resting state. It exists in the key space for forward
   * compatibility, but no transition ever sets it: a retryable failure goes
   * straight back to Pending with a backoff gate, one transition instead of two.
   */
  Failed: 0x03,
  /** Dead-lettered after its attempts ran out, or failed permanently. Only an operator retry moves it. */
  Dead: 0x04,
  /**
   * Stopped by an operator or its tenant before it finished. Terminal like Dead: only an
   * operator retry moves it, and retention prunes it after `retention.cancelled_secs`.
   */
  Cancelled: 0x05,
} as const;
export type JobState = (typeof JobState)[keyof typeof JobState];

/** Lower-case names, as printed by the CLI and accepted by list filters. */
export const JOB_STATE_NAMES: Readonly<Record<JobState, string>> = {
  [JobState.Pending]: 'pending',
  [JobState.Leased]: 'leased',
  [JobState.Completed]: 'completed',
  [JobState.Failed]: 'failed',
  [JobState.Dead]: 'dead',
  [JobState.Cancelled]: 'cancelled',
};

export const ALL_JOB_STATES: readonly JobState[] = [
  JobState.Pending,
  JobState.Leased,
  JobState.Completed,
  JobState.Failed,
  JobState.Dead,
  JobState.Cancelled,
];

export function isJobState(value: number): value is JobState {
  return Number.isInteger(value) && value >= 0 && value <= 5;
}

/** What happened to a job: one event per step of a transition (docs/design.md). */
export const EVENT_TRANSITIONS = [
  'enqueued',
  'leased',
  'extended',
  'completed',
  'failed',
  'reaped',
  'dead',
  'retried',
  'checkpoint',
  'stats',
  'released',
  'progress',
  'cancelled',
  'discarded',
  'run_now',
] as const;
export type EventTransition = (typeof EVENT_TRANSITIONS)[number];

/** One step of a job's lifecycle, as its audit trail records it. */
export interface JobEvent {
  readonly at: Micros;
  /**
   * One of `EVENT_TRANSITIONS`, or a name a newer version of Telha wrote: a reader keeps
   * such an event as it is rather than refusing the whole record, so a store can be read by the
   * version before the one that added an event.
   */
  readonly transition: EventTransition | (string & {});
  readonly detail: string | null;
}

/**
 * Which namespace a job lives in. Tenants are isolated from each other; the
 * system scope holds deployment-wide maintenance work (kinds `system:{task}`)
 * and sorts ahead of every tenant.
 */
export type QueueScope = { readonly type: 'tenant'; readonly tenant: string } | { readonly type: 'system' };

/** The scope of deployment-wide maintenance jobs (`system:` kinds). */
export const SYSTEM_SCOPE: QueueScope = Object.freeze({ type: 'system' });

/** The scope of one tenant's jobs. */
export function tenantScope(tenant: string): QueueScope {
  return { type: 'tenant', tenant };
}

/** A scope, or every scope at once (the worker fleet's cross-tenant view). */
export type ScopeFilter = QueueScope | { readonly type: 'any' };

export const ANY_SCOPE: ScopeFilter = Object.freeze({ type: 'any' });

/** A job as the store holds it: identity, state, lease, attempts, payload and result, and its event trail. */
export interface JobRecord {
  /** UUID (v7, so ids of one store sort roughly by creation), canonical lower-case text. */
  readonly jobId: string;
  /** The owning tenant, or `null` for the system scope. The key carries only the scope's hash, and operators want the name. */
  readonly tenant: string | null;
  readonly kind: string;
  /** Opaque bytes; the queue never interprets them. */
  readonly payload: Uint8Array;
  /** 0-255, lower is sooner. Part of the key. */
  readonly priority: number;
  /** Enqueue time in µs, strictly increasing per store. Part of the key: FIFO within priority. */
  readonly createdAt: Micros;
  readonly state: JobState;
  /** Lease/fail cycles consumed: a fail or a reaped lease adds one. */
  readonly attempts: number;
  /** The fencing token: incremented on every lease, never decreases. */
  readonly leaseGeneration: number;
  readonly workerId: string | null;
  readonly leaseDeadline: Micros | null;
  /** The backoff gate: not leased before this time. */
  readonly notBefore: Micros | null;
  readonly idempotencyKey: string | null;
  /** Per-job ceiling; `null` means `jobs.max_attempts`. */
  readonly maxAttempts: number | null;
  /** Lease-scoped checkpoint; cleared on every new lease and whenever the job leaves Leased. */
  readonly continuation: Uint8Array | null;
  readonly events: readonly JobEvent[];
  /**
   * The latest this attempt may run, heartbeats or not (the job timeout); `null` when no
   * timeout applies or the job is not Leased. Stored only when set, like the fields below, so a
   * record without them reads exactly as version 1 always did.
   */
  readonly attemptDeadline: Micros | null;
  /** This job's own attempt timeout in seconds, instead of its kind's; `null` for none. */
  readonly timeoutSecs: number | null;
  /** What the handler returned, stored with the completion (opaque bytes; JSON from the SDK). */
  readonly result: Uint8Array | null;
  /** The last progress the current (or last) attempt reported: JSON text, for people to read. */
  readonly progress: string | null;
  /**
   * The producer's W3C trace context, as enqueued, so each attempt's span joins the producer's
   * trace; `null` when the producer traced nothing. Never read by the queue, kept for the job's life.
   */
  readonly traceContext: TraceContext | null;
  /**
   * The latest-wins key this job was enqueued with (`NewJob.supersedeKey`), kept for the job's
   * life to show it; `null` for none. Whether the job still holds the key is the store's index.
   */
  readonly supersedeKey: string | null;
  /** The job that replaced this one (it ended Cancelled with reason `superseded`); `null` otherwise. */
  readonly supersededBy: string | null;
  /**
   * With `NewJob.debounceMaxMs`: the latest this job's debounce run may become due, its first
   * enqueue plus `debounceMaxMs`, carried from the Pending job a debounced enqueue replaces to
   * its successor; `null` for every other job.
   */
  readonly debounceUntil: Micros | null;
}

/**
 * What an enqueue with a `supersedeKey` does to the key's holder when it is Leased: `pending`
 * (the default) replaces only a Pending holder and lets a Leased one run on beside the new job;
 * `leased` cancels a Leased holder too, so its fence refuses whatever it submits later.
 */
export type SupersedeMode = 'pending' | 'leased';

/**
 * A W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate`
 * headers a propagator writes, carried in a job instead of in a request's headers.
 */
export interface TraceContext {
  /** `00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>`. */
  readonly traceparent: string;
  /** Vendor entries as the header carries them; `null` for none. */
  readonly tracestate: string | null;
}

/**
 * News that Pending work appeared, enough to wake the right lease waiters:
 * whose scope (`tenant`, `null` for the system scope) and kind it is, whether
 * its gate is already open, and how many such jobs there are.
 */
export interface WorkNotice {
  readonly tenant: string | null;
  readonly kind: string;
  readonly ready: boolean;
  readonly count: number;
}

/** One notice per (tenant, kind, ready) group of `jobs`, which the caller knows to be Pending. */
export function workNotices(
  jobs: readonly Pick<JobRecord, 'tenant' | 'kind' | 'notBefore'>[],
  now: Micros,
): WorkNotice[] {
  const groups = new Map<string, { tenant: string | null; kind: string; ready: boolean; count: number }>();
  for (const job of jobs) {
    const ready = job.notBefore === null || job.notBefore <= now;
    const key = `${job.tenant === null ? '' : `t:${job.tenant}`}\u0000${job.kind}\u0000${ready ? 1 : 0}`;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { tenant: job.tenant, kind: job.kind, ready, count: 1 });
    else group.count++;
  }
  return [...groups.values()];
}

/**
 * A job to create, as a producer (or a handler chaining successors) writes it.
 * Every field but `kind` is optional. The same shape is accepted by the
 * engine, the SDK and the wire's `NewJob` message.
 */
export interface NewJob {
  /** 1-255 bytes, no whitespace. `system:` kinds belong to the system scope. */
  readonly kind: string;
  /** Opaque bytes (a string is stored as its UTF-8 bytes), at most `jobs.max_payload_bytes` (default 1 MiB). */
  readonly payload?: Uint8Array | string;
  /** 0-255, lower is sooner; default 128. */
  readonly priority?: number;
  /** Not leased before this many milliseconds from now. */
  readonly delayMs?: number;
  /** Not leased before this time (µs since the epoch). Wins over `delayMs`. */
  readonly notBefore?: Micros;
  /** This job's own attempt ceiling, instead of `jobs.max_attempts`. */
  readonly maxAttempts?: number;
  /**
   * The longest one attempt may run, heartbeats or not, in seconds (instead of its kind's
   * `timeout_secs`): past it the lease is reaped like an expired one, with detail `timeout`.
   */
  readonly timeoutSecs?: number;
  /** A second enqueue with the same key in the same scope returns the first job, for as long as that job is retained. */
  readonly idempotencyKey?: string;
  /**
   * The trace this job continues. Left out, the SDK and the engine fill it from the active span
   * when an OpenTelemetry SDK is registered (`telha` traces the enqueue); set, it is stored as given.
   */
  readonly traceContext?: TraceContext;
  /**
   * Latest wins: an enqueue with a key whose holder in the same scope is Pending (ready or
   * delayed) replaces it in the same atomic write; the holder ends Cancelled with reason
   * `superseded` and a link to this job (`supersededBy`). 1-255 bytes.
   */
  readonly supersedeKey?: string;
  /** What happens to a Leased holder of `supersedeKey` (see {@link SupersedeMode}); default `pending`. */
  readonly supersede?: SupersedeMode;
  /**
   * Debounce (trailing), with `supersedeKey`: the job becomes due this many milliseconds after
   * the latest enqueue with its key, carrying the latest payload. Not with `delayMs` or `notBefore`.
   */
  readonly debounceMs?: number;
  /**
   * With `debounceMs`: the job becomes due at most this many milliseconds after the first enqueue
   * of the current debounce run (the first one that replaced no Pending holder), however many
   * enqueues arrive after it. At least `debounceMs`.
   */
  readonly debounceMaxMs?: number;
}

/** What an enqueue answers: the job, and whether this call created it. */
export interface EnqueueResult<J extends JobRecord = JobRecord> {
  readonly job: J;
  /** `false` when the idempotency key matched an existing job, which is returned instead. */
  readonly created: boolean;
}

/** One page of a job list. */
export interface ListPage<J extends JobRecord = JobRecord> {
  readonly jobs: readonly J[];
  /** Pass back as `pageToken` for the next page; `null` at the end. */
  readonly nextPageToken: string | null;
}

/** How many jobs of one kind are in one state. */
export interface CountRow {
  readonly state: JobState;
  readonly kind: string;
  readonly count: number;
}

export interface CompleteOptions {
  /** Jobs to enqueue in the completed job's scope, in the same fenced write (chained enqueue). */
  readonly successors?: readonly NewJob[];
  /** What the handler returned, stored in the same fenced write; at most `jobs.max_result_bytes`. */
  readonly result?: Uint8Array;
}

export interface CompleteResult {
  readonly job: JobRecord;
  readonly successors: readonly EnqueueResult[];
}

export interface FailOptions {
  /** What went wrong; kept (cut to 1,024 characters) in the job's `failed` event. */
  readonly error: string;
  /** `true` dead-letters at once, whatever attempts remain. Default `false`. */
  readonly permanent?: boolean;
}

/** What a worker proves it holds when it submits: the fencing pair granted at lease time. */
export interface LeaseFence {
  readonly workerId: string;
  readonly leaseGeneration: number;
}

/** When a job reached a terminal state (the time of its last event), or `null` while it is live. */
export function finishedAt(record: JobRecord): Micros | null {
  if (record.state !== JobState.Completed && record.state !== JobState.Dead && record.state !== JobState.Cancelled) {
    return null;
  }
  const last = record.events[record.events.length - 1];
  return last ? last.at : record.createdAt;
}

/** One item's answer in a batch whose items succeed or fail on their own. */
export type ItemResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: Error };

export function itemOk<T>(value: T): ItemResult<T> {
  return { ok: true, value };
}

export function itemFailed<T>(error: unknown): ItemResult<T> {
  return { ok: false, error: error instanceof Error ? error : new Error(String(error)) };
}
