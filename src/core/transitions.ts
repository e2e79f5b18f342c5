/**
 * The state machine: a table of edges and one pure function per edge,
 * `(record, request, now) => newRecord`, throwing a `TelhaError` when the edge
 * does not apply. Backends wrap these in an atomic read-check-write, so every
 * backend applies exactly the same rules.
 */
import { backoffMicros } from './backoff.ts';
import { secondsToMicros } from './clock.ts';
import type { JobsConfig } from './config.ts';
import { invalidArgument, LeaseConflictError, TelhaError, ErrorCode } from './errors.ts';
import { kindPolicy } from './kind-policy.ts';
import { MAX_EVENT_DETAIL_CHARS, MAX_EVENTS, SYSTEM_KIND_PREFIX } from './bounds.ts';
import {
  JOB_STATE_NAMES,
  JobState,
  type EventTransition,
  type JobEvent,
  type JobRecord,
  type LeaseFence,
  type Micros,
  type SupersedeMode,
  type TraceContext,
} from './types.ts';

/** Where a transition may start: a state, or nothing (the job does not exist yet). */
export type TransitionSource = keyof typeof JobState | 'start';

/**
 * Every edge of the state machine, as data, named after the function that
 * takes it. Each function below checks its own (before, after) pair against
 * this table as it returns, so an edge the table lacks cannot be taken;
 * `docs/state-machine.md` draws each one (a test checks).
 */
export const TRANSITIONS = [
  { name: 'enqueue', from: 'start', to: 'Pending' },
  { name: 'lease', from: 'Pending', to: 'Leased' },
  { name: 'heartbeat', from: 'Leased', to: 'Leased' },
  { name: 'checkpoint', from: 'Leased', to: 'Leased' },
  { name: 'complete', from: 'Leased', to: 'Completed' },
  { name: 'fail', from: 'Leased', to: 'Pending' },
  { name: 'fail', from: 'Leased', to: 'Dead' },
  { name: 'reap', from: 'Leased', to: 'Pending' },
  { name: 'reap', from: 'Leased', to: 'Dead' },
  { name: 'release', from: 'Leased', to: 'Pending' },
  { name: 'retry', from: 'Dead', to: 'Pending' },
  { name: 'retry', from: 'Cancelled', to: 'Pending' },
  { name: 'cancel', from: 'Pending', to: 'Cancelled' },
  { name: 'cancel', from: 'Leased', to: 'Cancelled' },
  { name: 'discard', from: 'Dead', to: 'Cancelled' },
  { name: 'runNow', from: 'Pending', to: 'Pending' },
] as const satisfies readonly { name: string; from: TransitionSource; to: keyof typeof JobState }[];

export type TransitionName = (typeof TRANSITIONS)[number]['name'];

const STATE_KEYS = Object.fromEntries(Object.entries(JobState).map(([name, value]) => [value, name])) as Record<
  JobState,
  keyof typeof JobState
>;
const EDGES: ReadonlySet<string> = new Set(TRANSITIONS.map((t) => `${t.name} ${t.from} ${t.to}`));

/** Whether the table has an edge `name` from `before` to `after`. */
export function isEdge(name: TransitionName, before: JobState | 'start', after: JobState): boolean {
  return EDGES.has(`${name} ${before === 'start' ? 'start' : STATE_KEYS[before]} ${STATE_KEYS[after]}`);
}

/** Return `after` if `name` may move a job from `before` to it; otherwise the code has a bug, and nothing is written. */
function taking(name: TransitionName, before: JobState | 'start', after: JobRecord): JobRecord {
  if (!isEdge(name, before, after.state)) {
    const from = before === 'start' ? 'start' : STATE_KEYS[before];
    throw new TelhaError(
      ErrorCode.Internal,
      `transition ${name} may not move job ${after.jobId} from ${from} to ${STATE_KEYS[after.state]}`,
    );
  }
  return after;
}

/** What the fail path and the reaper need to decide between a retry and the dead-letter. */
export interface RetryPolicy {
  /** The `jobs` settings, with the per-kind tables (`jobs.kinds`) that override them. */
  readonly config: Pick<
    JobsConfig,
    'max_attempts' | 'backoff_base_secs' | 'backoff_factor' | 'backoff_cap_secs' | 'lease_ttl_secs' | 'kinds'
  >;
}

export interface NewJobFields {
  readonly jobId: string;
  readonly tenant: string | null;
  readonly kind: string;
  readonly payload: Uint8Array;
  readonly priority: number;
  readonly createdAt: Micros;
  readonly notBefore: Micros | null;
  readonly idempotencyKey: string | null;
  readonly maxAttempts: number | null;
  readonly timeoutSecs: number | null;
  /** Left out for none: a job a producer did not trace (or a schedule fired) carries none. */
  readonly traceContext?: TraceContext | null;
  /** Left out for none (`NewJob.supersedeKey`). */
  readonly supersedeKey?: string | null;
  /** What the enqueue does to a Leased holder of `supersedeKey`; never stored. Left out: `pending`. */
  readonly supersede?: SupersedeMode;
  /** Left out for none: the latest a debounce run begun by this enqueue may be due (`NewJob.debounceMaxMs`). */
  readonly debounceUntil?: Micros | null;
}

/** enqueue: a Pending row with no attempts, generation 0 and one `enqueued` event. */
export function enqueue(fields: NewJobFields, now: Micros): JobRecord {
  const details: string[] = [];
  if (fields.notBefore !== null && fields.notBefore > now) details.push(`not_before=${fields.notBefore}`);
  if (fields.maxAttempts !== null) details.push(`max_attempts=${fields.maxAttempts}`);
  if (fields.timeoutSecs !== null) details.push(`timeout_secs=${fields.timeoutSecs}`);
  if (fields.idempotencyKey !== null) details.push(`idempotency_key=${fields.idempotencyKey}`);
  const supersedeKey = fields.supersedeKey ?? null;
  if (supersedeKey !== null) details.push(`supersede_key=${supersedeKey}`);
  return taking('enqueue', 'start', {
    jobId: fields.jobId,
    tenant: fields.tenant,
    kind: fields.kind,
    payload: fields.payload,
    priority: fields.priority,
    createdAt: fields.createdAt,
    notBefore: fields.notBefore,
    idempotencyKey: fields.idempotencyKey,
    maxAttempts: fields.maxAttempts,
    timeoutSecs: fields.timeoutSecs,
    state: JobState.Pending,
    attempts: 0,
    leaseGeneration: 0,
    workerId: null,
    leaseDeadline: null,
    continuation: null,
    attemptDeadline: null,
    result: null,
    progress: null,
    traceContext: fields.traceContext ?? null,
    supersedeKey,
    supersededBy: null,
    debounceUntil: fields.debounceUntil ?? null,
    events: [event(now, 'enqueued', details.length > 0 ? details.join(' ') : null)],
  });
}

/** Whether a Pending job may be leased now: past its gate and of a kind the lease filter takes. */
export function isLeasable(record: JobRecord, now: Micros, kinds: readonly string[] | null): boolean {
  if (record.state !== JobState.Pending) return false;
  if (record.notBefore !== null && record.notBefore > now) return false;
  return leaseKindMatches(record.kind, kinds);
}

/** The list filter: `null` matches every kind, otherwise any prefix must match. */
export function kindMatches(kind: string, kinds: readonly string[] | null): boolean {
  return kinds === null || kinds.some((prefix) => kind.startsWith(prefix));
}

/**
 * The lease filter, which every store's claim and the lease waiters' wake-up
 * apply: `kindMatches`, except that a `system:` kind is matched only by a
 * prefix that itself starts with `system:`. System jobs are the server's own
 * work (retention pruning among them): a worker that leases every kind, or
 * `sys`, must not take one and complete it as a no-op; the maintenance
 * runner, and a worker that asks for `system:` kinds by name, do.
 */
export function leaseKindMatches(kind: string, kinds: readonly string[] | null): boolean {
  if (!kind.startsWith(SYSTEM_KIND_PREFIX)) return kindMatches(kind, kinds);
  return kinds !== null && kinds.some((prefix) => prefix.startsWith(SYSTEM_KIND_PREFIX) && kind.startsWith(prefix));
}

/** Whether a lease's kind prefixes reach the server's own `system:` kinds (see `leaseKindMatches`). */
export function leasesSystemKinds(kinds: readonly string[] | null): boolean {
  return kinds !== null && kinds.some((prefix) => prefix.startsWith(SYSTEM_KIND_PREFIX));
}

/** The job's own attempt timeout, else its kind's (`jobs.kinds`), in seconds; `null` for none. */
export function effectiveTimeoutSecs(record: JobRecord, policy: RetryPolicy): number | null {
  return record.timeoutSecs ?? kindPolicy(policy.config, record.kind).timeoutSecs;
}

/**
 * A lease deadline one TTL from now, but never past the attempt's own deadline: a handler that
 * heartbeats for ever still loses its job when its time is up, and the reaper, which looks only
 * at lease deadlines, finds it like any other expired lease.
 */
function nextLeaseDeadline(attemptDeadline: Micros | null, now: Micros, policy: RetryPolicy): Micros {
  const byTtl = now + secondsToMicros(policy.config.lease_ttl_secs);
  return attemptDeadline === null ? byTtl : Math.min(byTtl, attemptDeadline);
}

/**
 * lease: Pending to Leased. Bumps the fencing generation, clears any previous attempt's
 * checkpoint and progress (progress describes the attempt running now), and starts the
 * attempt's clock when a timeout applies.
 */
export function lease(record: JobRecord, workerId: string, now: Micros, policy: RetryPolicy): JobRecord {
  expectState(record, 'lease', JobState.Pending);
  const leaseGeneration = record.leaseGeneration + 1;
  const timeoutSecs = effectiveTimeoutSecs(record, policy);
  const attemptDeadline = timeoutSecs === null ? null : now + secondsToMicros(timeoutSecs);
  return taking(
    'lease',
    record.state,
    withChanges(record, {
      state: JobState.Leased,
      leaseGeneration,
      workerId,
      leaseDeadline: nextLeaseDeadline(attemptDeadline, now, policy),
      attemptDeadline,
      continuation: null,
      progress: null,
      events: appendEvent(record.events, event(now, 'leased', `worker=${workerId} generation=${leaseGeneration}`)),
    }),
  );
}

/**
 * The fencing check: first the worker, then the generation, so a job held by another worker (or by nobody) reads as `worker_mismatch` whatever generation was sent.
 * A job that is not leased at all is leased by nobody, so it fails the first check, except a
 * cancelled one: its last holder learns why it lost the job (`cancelled`), so the SDK can abort
 * the handler instead of treating the refusal as a lost lease.
 */
export function checkFence(record: JobRecord, fence: LeaseFence): void {
  if (record.state === JobState.Cancelled) {
    throw new LeaseConflictError(record.jobId, 'cancelled', `job was cancelled, submitted by "${fence.workerId}"`);
  }
  if (record.state !== JobState.Leased || record.workerId !== fence.workerId) {
    const holder =
      record.state === JobState.Leased && record.workerId !== null
        ? `leased by "${record.workerId}"`
        : `not leased (state ${JOB_STATE_NAMES[record.state]})`;
    throw new LeaseConflictError(record.jobId, 'worker_mismatch', `${holder}, submitted by "${fence.workerId}"`);
  }
  if (record.leaseGeneration !== fence.leaseGeneration) {
    throw new LeaseConflictError(
      record.jobId,
      'generation_superseded',
      `lease generation ${fence.leaseGeneration} superseded by ${record.leaseGeneration}`,
    );
  }
}

/**
 * heartbeat: the holder is alive; push the deadline out by one TTL from now, never past the
 * attempt deadline (event `extended`). With `progress` (JSON text, checked by the caller) it
 * also stores the attempt's progress, and the event is `progress`: the value itself lives in the
 * record, not in the trail.
 */
export function heartbeat(
  record: JobRecord,
  fence: LeaseFence,
  now: Micros,
  policy: RetryPolicy,
  progress: string | null = null,
): JobRecord {
  checkFence(record, fence);
  return taking(
    'heartbeat',
    record.state,
    withChanges(record, {
      leaseDeadline: nextLeaseDeadline(record.attemptDeadline, now, policy),
      progress: progress ?? record.progress,
      events: appendEvent(
        record.events,
        event(now, progress === null ? 'extended' : 'progress', `generation=${record.leaseGeneration}`),
      ),
    }),
  );
}

/** checkpoint: store the continuation and extend the lease, in the same write. */
export function checkpoint(
  record: JobRecord,
  fence: LeaseFence,
  continuation: Uint8Array,
  now: Micros,
  policy: RetryPolicy,
): JobRecord {
  checkFence(record, fence);
  return taking(
    'checkpoint',
    record.state,
    withChanges(record, {
      continuation,
      leaseDeadline: nextLeaseDeadline(record.attemptDeadline, now, policy),
      events: appendEvent(
        record.events,
        event(now, 'checkpoint', `generation=${record.leaseGeneration} bytes=${continuation.byteLength}`),
      ),
    }),
  );
}

/**
 * complete: Leased to Completed, storing what the handler returned (`result`, checked by the
 * caller) in the same write; `null` for none.
 */
export function complete(
  record: JobRecord,
  fence: LeaseFence,
  now: Micros,
  result: Uint8Array | null = null,
): JobRecord {
  checkFence(record, fence);
  return taking(
    'complete',
    record.state,
    leaveLease(record, {
      state: JobState.Completed,
      result,
      events: appendEvent(
        record.events,
        event(now, 'completed', `worker=${fence.workerId} generation=${record.leaseGeneration}`),
      ),
    }),
  );
}

export interface FailRequest {
  /** What went wrong, kept (cut to 1,024 characters) in the `failed` event. */
  readonly error: string;
  /** `true` dead-letters at once, whatever attempts remain. */
  readonly permanent: boolean;
}

/** A caller's failure checked for shape (`error` a string; `permanent` default `false`). */
export function failRequest(options: { readonly error: unknown; readonly permanent?: boolean }): FailRequest {
  if (typeof options.error !== 'string') throw invalidArgument('error', 'must be a string');
  return { error: options.error, permanent: options.permanent ?? false };
}

/** fail: attempts + 1, then back to Pending behind a backoff gate, or Dead at the ceiling or when not retryable. */
export function fail(
  record: JobRecord,
  fence: LeaseFence,
  request: FailRequest,
  now: Micros,
  policy: RetryPolicy,
): JobRecord {
  checkFence(record, fence);
  const attempts = record.attempts + 1;
  const failed = event(
    now,
    'failed',
    `worker=${fence.workerId} generation=${record.leaseGeneration} attempt=${attempts}${request.permanent ? ' permanent' : ''}: ${request.error}`,
  );
  const events = appendEvent(record.events, failed);
  if (request.permanent) {
    return taking(
      'fail',
      record.state,
      leaveLease(record, {
        attempts,
        state: JobState.Dead,
        events: appendEvent(events, event(now, 'dead', 'failed permanently')),
      }),
    );
  }
  return taking(
    'fail',
    record.state,
    retryOrDeadLetter(leaveLease(record, { attempts }), events, now, policy, `attempts exhausted (${attempts})`),
  );
}

/**
 * release: the holder hands back a job it has not finished (a worker shutting
 * down, or giving up on a handler at its close timeout). Pending and ready at
 * once, with no attempt charged and no backoff gate: nothing failed. The
 * generation stays; the next lease bumps it, which fences out the releaser.
 */
export function release(record: JobRecord, fence: LeaseFence, now: Micros): JobRecord {
  checkFence(record, fence);
  return taking(
    'release',
    record.state,
    leaveLease(record, {
      state: JobState.Pending,
      notBefore: null,
      events: appendEvent(
        record.events,
        event(now, 'released', `worker=${fence.workerId} generation=${record.leaseGeneration}`),
      ),
    }),
  );
}

/** Whether the reaper should reclaim this job now. */
export function isLeaseExpired(record: JobRecord, now: Micros): boolean {
  return record.state === JobState.Leased && record.leaseDeadline !== null && record.leaseDeadline <= now;
}

/** reap: an expired lease counts as a failed attempt; back to Pending with backoff, or Dead at the ceiling. */
export function reap(record: JobRecord, now: Micros, policy: RetryPolicy): JobRecord {
  expectState(record, 'reap', JobState.Leased);
  if (!isLeaseExpired(record, now)) {
    throw new TelhaError(ErrorCode.FailedPrecondition, `job ${record.jobId}: lease has not expired`);
  }
  const attempts = record.attempts + 1;
  // The lease ran out because the attempt's time was up, not because its holder went quiet.
  const timedOut = record.attemptDeadline !== null && record.attemptDeadline <= now;
  const events = appendEvent(
    record.events,
    event(
      now,
      'reaped',
      `worker=${record.workerId ?? ''} generation=${record.leaseGeneration} attempt=${attempts}${timedOut ? ' timeout' : ''}`,
    ),
  );
  return taking(
    'reap',
    record.state,
    retryOrDeadLetter(
      leaveLease(record, { attempts }),
      events,
      now,
      policy,
      timedOut ? 'timed out on the last attempt' : 'lease expired on the last attempt',
    ),
  );
}

/**
 * retry (operator): Dead or Cancelled back to Pending with a fresh attempt budget. The generation
 * keeps growing. Any result goes: the job is to run again, and a result belongs to the run that
 * completed it.
 */
export function retry(record: JobRecord, now: Micros): JobRecord {
  if (record.state !== JobState.Dead && record.state !== JobState.Cancelled) {
    throw new TelhaError(
      ErrorCode.FailedPrecondition,
      `job ${record.jobId}: cannot retry a ${JOB_STATE_NAMES[record.state]} job (must be dead or cancelled)`,
    );
  }
  return taking(
    'retry',
    record.state,
    withChanges(record, {
      state: JobState.Pending,
      result: null,
      attempts: 0,
      notBefore: null,
      events: appendEvent(record.events, event(now, 'retried', `after ${record.attempts} attempts`)),
    }),
  );
}

/** Who asked for a cancel and why, kept in the `cancelled` event. */
export interface CancelRequest {
  /** The caller's principal (`operator`, `tenant:acme`), or `null` when unknown (an in-process call). */
  readonly by: string | null;
  readonly reason: string | null;
}

/**
 * cancel: Pending or Leased to Cancelled. A Leased job keeps its generation and loses its
 * holder, so the holder's next fenced call is refused with reason `cancelled` and nothing it
 * submits can land; there is no wait for the worker to agree.
 */
export function cancel(record: JobRecord, request: CancelRequest, now: Micros): JobRecord {
  if (record.state !== JobState.Pending && record.state !== JobState.Leased) {
    throw new TelhaError(
      ErrorCode.FailedPrecondition,
      `job ${record.jobId}: cannot cancel a ${JOB_STATE_NAMES[record.state]} job (must be pending or leased)`,
    );
  }
  const holder =
    record.state === JobState.Leased ? [`worker=${record.workerId ?? ''} generation=${record.leaseGeneration}`] : [];
  return taking(
    'cancel',
    record.state,
    leaveLease(record, {
      state: JobState.Cancelled,
      events: appendEvent(record.events, event(now, 'cancelled', operatorDetail(holder, request))),
    }),
  );
}

/**
 * supersede: the cancel edge, taken by an enqueue with the same `supersedeKey` in the same
 * scope (`core/supersede.ts` decides when). Ends Cancelled with reason `superseded`, naming the
 * successor in the record (`supersededBy`) and in the event, so the transitions log's entry
 * names it too. A Leased job loses its holder as in `cancel`: its fence refuses what it submits.
 */
export function supersede(record: JobRecord, successorId: string, now: Micros): JobRecord {
  const cancelled = cancel(record, { by: null, reason: `superseded successor=${successorId}` }, now);
  return withChanges(cancelled, { supersededBy: successorId });
}

/**
 * A debounced job just enqueued (by `enqueue`) that replaced a Pending job of the same debounce
 * run: it keeps the run's `until` and is due no later than it, so enqueues that keep arriving
 * cannot hold the job back for ever. Its `enqueued` event says when it is due, as `enqueue`'s does.
 */
export function continueDebounceRun(record: JobRecord, until: Micros): JobRecord {
  const notBefore = record.notBefore === null ? until : Math.min(record.notBefore, until);
  const [enqueued, ...rest] = record.events;
  if (enqueued === undefined) return withChanges(record, { notBefore, debounceUntil: until });
  const details = (enqueued.detail ?? '').split(' ').filter((d) => d !== '' && !d.startsWith('not_before='));
  if (notBefore > enqueued.at) details.unshift(`not_before=${notBefore}`);
  const events = [{ ...enqueued, detail: details.length > 0 ? details.join(' ') : null }, ...rest];
  return withChanges(record, { notBefore, debounceUntil: until, events });
}

/**
 * discard (operator): a Dead job the operator has looked at and given up on, moved to Cancelled
 * with its own `discarded` event, so the Dead list holds only what still needs a decision. The
 * record stays, audit trail and all, until retention prunes it after `retention.cancelled_secs`
 * from the discard; nothing is deleted out of sight. A retry can still bring it back.
 */
export function discard(record: JobRecord, request: CancelRequest, now: Micros): JobRecord {
  expectState(record, 'discard', JobState.Dead);
  return taking(
    'discard',
    record.state,
    withChanges(record, {
      state: JobState.Cancelled,
      events: appendEvent(record.events, event(now, 'discarded', operatorDetail([], request))),
    }),
  );
}

/** Who asked for a run now, kept in the `run_now` event. */
export interface RunNowRequest {
  /** The caller's principal, or `null` when unknown (an in-process call). */
  readonly by: string | null;
}

/**
 * runNow (operator): a Pending job behind a gate (enqueued with a delay, or backing off after a
 * failure) made ready at once. Only the gate goes: the attempts, the priority and the place in
 * line (`created_at`) stay, and a pause or kind limit still holds it back. A job already ready
 * is refused, so an operator learns that waiting was not what held it.
 */
export function runNow(record: JobRecord, request: RunNowRequest, now: Micros): JobRecord {
  expectState(record, 'run now', JobState.Pending);
  if (record.notBefore === null || record.notBefore <= now) {
    throw new TelhaError(
      ErrorCode.FailedPrecondition,
      `job ${record.jobId}: already ready (no delay or backoff to skip)`,
    );
  }
  return taking(
    'runNow',
    record.state,
    withChanges(record, {
      notBefore: null,
      events: appendEvent(
        record.events,
        event(now, 'run_now', operatorDetail([`not_before=${record.notBefore}`], request)),
      ),
    }),
  );
}

/** An operator event's detail: `details`, then who asked and why, as the `cancelled` event spells them. */
function operatorDetail(
  details: readonly string[],
  request: { readonly by: string | null; readonly reason?: string | null },
): string | null {
  const all = [...details];
  if (request.by !== null) all.push(`by=${request.by}`);
  if (request.reason !== undefined && request.reason !== null && request.reason !== '')
    all.push(`reason=${request.reason}`);
  return all.length > 0 ? all.join(' ') : null;
}

/** The job's own ceiling, else its kind's (`jobs.kinds`), else `jobs.max_attempts`. */
export function effectiveMaxAttempts(record: JobRecord, policy: RetryPolicy): number {
  return record.maxAttempts ?? kindPolicy(policy.config, record.kind).maxAttempts;
}

function retryOrDeadLetter(
  record: JobRecord,
  events: readonly JobEvent[],
  now: Micros,
  policy: RetryPolicy,
  deadReason: string,
): JobRecord {
  if (record.attempts >= effectiveMaxAttempts(record, policy)) {
    return withChanges(record, { state: JobState.Dead, events: appendEvent(events, event(now, 'dead', deadReason)) });
  }
  const notBefore = now + backoffMicros(policy.config, record.kind, record.attempts);
  return withChanges(record, { state: JobState.Pending, notBefore, events });
}

/** Leaving Leased clears the holder, the deadlines and the lease-scoped checkpoint; `changes` go on top. */
function leaveLease(record: JobRecord, changes: Partial<JobRecord>): JobRecord {
  return withChanges(record, {
    workerId: null,
    leaseDeadline: null,
    attemptDeadline: null,
    continuation: null,
    ...changes,
  });
}

/**
 * `record` with `changes` (a field left out, or `undefined`, keeps its value), built field by
 * field. Not a spread: on Node 20 (V8 11.3) a spread with fields added after it
 * (`{ ...record, state, events }`) falls off a cliff that Node 22 and 24 do not have, and every
 * transition makes one (bench/RESULTS.md, "Transitions without object spreads").
 */
function withChanges(record: JobRecord, changes: Partial<JobRecord>): JobRecord {
  return {
    jobId: changes.jobId ?? record.jobId,
    tenant: changes.tenant === undefined ? record.tenant : changes.tenant,
    kind: changes.kind ?? record.kind,
    payload: changes.payload ?? record.payload,
    priority: changes.priority ?? record.priority,
    createdAt: changes.createdAt ?? record.createdAt,
    state: changes.state ?? record.state,
    attempts: changes.attempts ?? record.attempts,
    leaseGeneration: changes.leaseGeneration ?? record.leaseGeneration,
    workerId: changes.workerId === undefined ? record.workerId : changes.workerId,
    leaseDeadline: changes.leaseDeadline === undefined ? record.leaseDeadline : changes.leaseDeadline,
    notBefore: changes.notBefore === undefined ? record.notBefore : changes.notBefore,
    idempotencyKey: changes.idempotencyKey === undefined ? record.idempotencyKey : changes.idempotencyKey,
    maxAttempts: changes.maxAttempts === undefined ? record.maxAttempts : changes.maxAttempts,
    continuation: changes.continuation === undefined ? record.continuation : changes.continuation,
    events: changes.events ?? record.events,
    attemptDeadline: changes.attemptDeadline === undefined ? record.attemptDeadline : changes.attemptDeadline,
    timeoutSecs: changes.timeoutSecs === undefined ? record.timeoutSecs : changes.timeoutSecs,
    result: changes.result === undefined ? record.result : changes.result,
    progress: changes.progress === undefined ? record.progress : changes.progress,
    traceContext: changes.traceContext === undefined ? record.traceContext : changes.traceContext,
    supersedeKey: changes.supersedeKey === undefined ? record.supersedeKey : changes.supersedeKey,
    supersededBy: changes.supersededBy === undefined ? record.supersededBy : changes.supersededBy,
    debounceUntil: changes.debounceUntil === undefined ? record.debounceUntil : changes.debounceUntil,
  };
}

function expectState(record: JobRecord, transition: string, expected: JobState): void {
  if (record.state !== expected) {
    throw new TelhaError(
      ErrorCode.FailedPrecondition,
      `job ${record.jobId}: cannot ${transition} a ${JOB_STATE_NAMES[record.state]} job (must be ${JOB_STATE_NAMES[expected]})`,
    );
  }
}

function event(at: Micros, transition: EventTransition, detail: string | null): JobEvent {
  return { at, transition, detail: detail === null ? null : storableDetail(detail) };
}

/**
 * A detail as a record can keep it: cut to {@link MAX_EVENT_DETAIL_CHARS}, never inside a
 * surrogate pair, and with any lone surrogate (a handler's error text may hold one) as U+FFFD,
 * which is what UTF-8 storage would make of it anyway, so the record reads back as written.
 */
function storableDetail(detail: string): string {
  if (detail.length <= MAX_EVENT_DETAIL_CHARS) return detail.toWellFormed();
  const last = detail.charCodeAt(MAX_EVENT_DETAIL_CHARS - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? MAX_EVENT_DETAIL_CHARS - 1 : MAX_EVENT_DETAIL_CHARS;
  return `${detail.slice(0, end).toWellFormed()}…`;
}

/** Transitions that may repeat many times per lease; a run of them is kept as one event with a count. */
const FOLDED: ReadonlySet<string> = new Set<EventTransition>(['extended', 'checkpoint', 'progress']);
const COUNT_SUFFIX = / count=(\d+)$/;

/**
 * Append an event, keeping the trail bounded: a repeat of the last heartbeat,
 * progress report or checkpoint replaces it with a running count, and past {@link MAX_EVENTS} the
 * oldest events after the first fold into one `stats` event, all but the latest `leased` one.
 */
export function appendEvent(events: readonly JobEvent[], next: JobEvent): JobEvent[] {
  const last = events[events.length - 1];
  if (last !== undefined && last.transition === next.transition && FOLDED.has(next.transition)) {
    const previousCount = Number(COUNT_SUFFIX.exec(last.detail ?? '')?.[1] ?? '1');
    // FOLDED holds only known transitions, so this one is an EventTransition.
    const folded = event(
      next.at,
      next.transition as EventTransition,
      `${next.detail ?? ''} count=${previousCount + 1}`.trimStart(),
    );
    return [...events.slice(0, -1), folded];
  }
  const all = [...events, next];
  if (all.length <= MAX_EVENTS) return all;
  // Keep the first event (enqueued) and the newest ones; fold the rest into a `stats` event.
  const first = all[0] as JobEvent;
  const statsIndex = all[1]?.transition === 'stats' ? 1 : -1;
  const previouslyDropped = statsIndex === 1 ? Number(/dropped=(\d+)/.exec(all[1]?.detail ?? '')?.[1] ?? '0') : 0;
  let keepFrom = all.length - (MAX_EVENTS - 2);
  // The latest `leased` event stays too: it dates the current lease (the Leases page, `jobs show`),
  // and a long lease's alternating heartbeats and progress reports would otherwise push it out.
  const leasedIndex = all.findLastIndex((e) => e.transition === 'leased');
  const keepLeased = leasedIndex > 0 && leasedIndex < keepFrom;
  if (keepLeased) keepFrom += 1;
  const droppedNow = keepFrom - 1 - (statsIndex === 1 ? 1 : 0) - (keepLeased ? 1 : 0);
  const stats = event(next.at, 'stats', `dropped=${previouslyDropped + droppedNow} older events`);
  return [first, stats, ...(keepLeased ? [all[leasedIndex] as JobEvent] : []), ...all.slice(keepFrom)];
}
