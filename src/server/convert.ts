/** Engine records to wire messages and back. */
import { create } from '@bufbuild/protobuf';
import { invalidArgument } from '../core/errors.ts';
import type { KindLimit, KindLimitStatus } from '../core/kind-limits.ts';
import type { Pause } from '../core/pauses.ts';
import { formatRate } from '../core/rate.ts';
import type { NewSchedule, Schedule, ScheduleChanges } from '../core/schedules.ts';
import type { JobState, EnqueueResult, JobRecord, NewJob, TraceContext } from '../core/types.ts';
import {
  EnqueueResultSchema,
  JobState as WireJobState,
  KindLimitSchema,
  KindPauseSchema,
  NewJobSchema,
  ScheduleSchema,
  type EnqueueResult as WireEnqueueResult,
  type Job,
  type JobEvent,
  type KindLimit as WireKindLimit,
  type KindPause,
  type NewJob as WireNewJob,
  type Schedule as WireSchedule,
  type Scope,
  type UpdateScheduleRequest,
} from '../gen/telha/v1/queue_pb.ts';
import { stateFromWire, stateToWire, supersedeModeFromWire } from '../wire/states.ts';
import type { RequestedScope } from '../edge/auth.ts';

/** A list filter's state: UNSPECIFIED means no filter; an unknown value is refused. */
export function stateFilterFromWire(state: WireJobState, field: string): JobState | null {
  if (state === WireJobState.UNSPECIFIED) return null;
  const core = stateFromWire(state);
  if (core === null) throw invalidArgument(field, `unknown job state ${String(state)}`);
  return core;
}

/** A set of states to match (Watch's `states`): each a known state; UNSPECIFIED names none and is refused. */
export function statesFromWire(states: readonly WireJobState[], field: string): ReadonlySet<JobState> {
  return new Set(
    states.map((state) => {
      const core = stateFilterFromWire(state, field);
      if (core === null) throw invalidArgument(field, 'a state, not JOB_STATE_UNSPECIFIED');
      return core;
    }),
  );
}

/**
 * `effectiveMaxAttempts`: the ceiling the job runs under (`effectiveMaxAttempts` of `core/transitions.ts`).
 *
 * Built as the message itself (`$typeName` and every field; an optional field `undefined` is
 * unset, as protobuf-es encodes it), which `create` returns as it is: `create` from an init
 * object walks every field again, and the init's conditional spreads cost Node 20 more. A job
 * is converted for every push and every answer that carries one, so the difference shows
 * (bench/RESULTS.md, "The measurements behind the code's choices").
 */
export function jobToWire(record: JobRecord, effectiveMaxAttempts: number): Job {
  return {
    $typeName: 'telha.v1.Job',
    jobId: record.jobId,
    tenant: record.tenant ?? '',
    kind: record.kind,
    payload: record.payload,
    priority: record.priority,
    createdAtUs: BigInt(record.createdAt),
    state: stateToWire(record.state),
    attempts: record.attempts,
    leaseGeneration: BigInt(record.leaseGeneration),
    workerId: record.workerId ?? undefined,
    leaseDeadlineUs: record.leaseDeadline === null ? undefined : BigInt(record.leaseDeadline),
    notBeforeUs: record.notBefore === null ? undefined : BigInt(record.notBefore),
    idempotencyKey: record.idempotencyKey ?? undefined,
    maxAttempts: record.maxAttempts ?? undefined,
    continuation: record.continuation ?? undefined,
    events: record.events.map((e): JobEvent => ({
      $typeName: 'telha.v1.JobEvent',
      atUs: BigInt(e.at),
      transition: e.transition,
      detail: e.detail ?? undefined,
    })),
    effectiveMaxAttempts,
    attemptDeadlineUs: record.attemptDeadline === null ? undefined : BigInt(record.attemptDeadline),
    timeoutSecs: record.timeoutSecs ?? undefined,
    result: record.result ?? undefined,
    progress: record.progress ?? undefined,
    traceContext:
      record.traceContext === null
        ? undefined
        : {
            $typeName: 'telha.v1.TraceContext',
            traceparent: record.traceContext.traceparent,
            tracestate: record.traceContext.tracestate ?? '',
          },
    supersedeKey: record.supersedeKey ?? undefined,
    supersededBy: record.supersededBy ?? undefined,
    debounceUntilUs: record.debounceUntil === null ? undefined : BigInt(record.debounceUntil),
  };
}

export function enqueueResultToWire(result: EnqueueResult, effectiveMaxAttempts: number): WireEnqueueResult {
  return create(EnqueueResultSchema, { job: jobToWire(result.job, effectiveMaxAttempts), created: result.created });
}

/**
 * A wire job request as engine options; the engine validates every field. Built field by
 * field: a conditional spread per optional field cost every enqueue an object each on Node 20
 * (bench/RESULTS.md, "The server at its transport's floor").
 */
export function newJobFromWire(job: WireNewJob | undefined, field: string): NewJob {
  if (job === undefined) throw invalidArgument(field, 'is required');
  const draft: { -readonly [K in keyof NewJob]: NewJob[K] } = { kind: job.kind, payload: job.payload };
  if (job.priority !== undefined) draft.priority = job.priority;
  if (job.delayMs !== undefined) draft.delayMs = toSafeNumber(job.delayMs, `${field}.delay_ms`);
  if (job.notBeforeUs !== undefined) draft.notBefore = toSafeNumber(job.notBeforeUs, `${field}.not_before_us`);
  if (job.maxAttempts !== undefined) draft.maxAttempts = job.maxAttempts;
  if (job.idempotencyKey !== undefined) draft.idempotencyKey = job.idempotencyKey;
  if (job.timeoutSecs !== undefined) draft.timeoutSecs = job.timeoutSecs;
  const traceContext = traceContextFromWire(job);
  if (traceContext !== null) draft.traceContext = traceContext;
  if (job.supersedeKey !== undefined) draft.supersedeKey = job.supersedeKey;
  const supersede = supersedeModeFromWire(job.supersede, `${field}.supersede`);
  if (supersede !== undefined) draft.supersede = supersede;
  if (job.debounceMs !== undefined) draft.debounceMs = toSafeNumber(job.debounceMs, `${field}.debounce_ms`);
  if (job.debounceMaxMs !== undefined) {
    draft.debounceMaxMs = toSafeNumber(job.debounceMaxMs, `${field}.debounce_max_ms`);
  }
  return draft;
}

/** The trace context a wire job request carries, unchecked (the engine checks it when it drafts the job). */
export function traceContextFromWire(job: WireNewJob | undefined): TraceContext | null {
  const carried = job?.traceContext;
  return carried === undefined ? null : { traceparent: carried.traceparent, tracestate: carried.tracestate || null };
}

/** A completion's options: its successors, and its result when the request carries one. */
export function completeOptionsFromWire(
  successors: readonly NewJob[],
  request: { readonly result?: Uint8Array | undefined },
): { successors: readonly NewJob[]; result?: Uint8Array } {
  return request.result === undefined ? { successors } : { successors, result: request.result };
}

export function scopeFromWire(scope: Scope | undefined): RequestedScope {
  switch (scope?.target.case) {
    case undefined:
      return null;
    case 'tenant':
      return { tenant: scope.target.value };
    case 'system':
      return scope.target.value ? { system: true } : null;
  }
}

/** A wire int64 as a JS number; values beyond 2^53 are refused rather than rounded. */
export function toSafeNumber(value: bigint, field: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw invalidArgument(field, 'is out of range');
  }
  return Number(value);
}

/** A stored schedule as the wire sends it; its job template as a `WireNewJob`. */
export function scheduleToWire(schedule: Schedule): WireSchedule {
  const { job } = schedule;
  return create(ScheduleSchema, {
    scope: {
      target:
        schedule.scope.type === 'tenant'
          ? { case: 'tenant', value: schedule.scope.tenant }
          : { case: 'system', value: true },
    },
    name: schedule.name,
    ...(schedule.cron === null ? {} : { cron: schedule.cron }),
    ...(schedule.timezone === null ? {} : { timezone: schedule.timezone }),
    ...(schedule.everySecs === null ? {} : { everySecs: schedule.everySecs }),
    job: create(NewJobSchema, {
      kind: job.kind,
      payload: job.payload,
      priority: job.priority,
      ...(job.maxAttempts === null ? {} : { maxAttempts: job.maxAttempts }),
      ...(job.timeoutSecs === null ? {} : { timeoutSecs: job.timeoutSecs }),
    }),
    paused: schedule.paused,
    ...(schedule.nextDueAt === null ? {} : { nextDueUs: BigInt(schedule.nextDueAt) }),
    ...(schedule.lastDueAt === null ? {} : { lastDueUs: BigInt(schedule.lastDueAt) }),
    createdAtUs: BigInt(schedule.createdAt),
    updatedAtUs: BigInt(schedule.updatedAt),
  });
}

/** A wire schedule to create; the engine validates every field. */
export function newScheduleFromWire(schedule: WireSchedule | undefined): NewSchedule {
  if (schedule === undefined) throw invalidArgument('schedule', 'is required');
  return {
    name: schedule.name,
    ...(schedule.cron === undefined ? {} : { cron: schedule.cron }),
    ...(schedule.timezone === undefined ? {} : { timezone: schedule.timezone }),
    ...(schedule.everySecs === undefined ? {} : { everySecs: schedule.everySecs }),
    job: newJobFromWire(schedule.job, 'job'),
    paused: schedule.paused,
  };
}

/** The fields an UpdateSchedule sets. */
export function scheduleChangesFromWire(req: UpdateScheduleRequest): ScheduleChanges {
  return {
    ...(req.cron === undefined ? {} : { cron: req.cron }),
    ...(req.timezone === undefined ? {} : { timezone: req.timezone }),
    ...(req.everySecs === undefined ? {} : { everySecs: req.everySecs }),
    ...(req.job === undefined ? {} : { job: newJobFromWire(req.job, 'job') }),
    ...(req.paused === undefined ? {} : { paused: req.paused }),
  };
}

/** A pause as the wire sends it. */
export function pauseToWire(pause: Pause): KindPause {
  const scope = pause.scope;
  return create(KindPauseSchema, {
    ...(scope === 'everywhere'
      ? { everywhere: true }
      : {
          scope: {
            target: scope.type === 'tenant' ? { case: 'tenant', value: scope.tenant } : { case: 'system', value: true },
          },
        }),
    kindPrefix: pause.kindPrefix,
    pausedAtUs: BigInt(pause.pausedAt),
    pausedBy: pause.by,
  });
}

/** A kind limit as the wire sends it: the rate in its canonical text, leased and tokens when known. */
export function kindLimitToWire(limit: KindLimit | KindLimitStatus): WireKindLimit {
  const status = 'leased' in limit ? limit : null;
  return create(KindLimitSchema, {
    kindPrefix: limit.kindPrefix,
    ...(limit.concurrency === null ? {} : { concurrency: limit.concurrency }),
    ...(limit.rate === null ? {} : { rate: formatRate(limit.rate) }),
    setAtUs: BigInt(limit.setAt),
    setBy: limit.by,
    leased: BigInt(status?.leased ?? 0),
    ...(status === null || status.tokens === null ? {} : { tokens: BigInt(status.tokens) }),
  });
}
