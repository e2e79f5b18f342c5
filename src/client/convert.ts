/** Wire messages to the engine's record type, so SDK users get the same `JobRecord`. */
import type {
  KindLimit as WireKindLimit,
  KindPause,
  TenantLimit as WireTenantLimit,
} from '../gen/telha/v1/queue_pb.ts';
import type { TenantLimitStatus } from '../core/tenant-limits.ts';
import type { KindLimitStatus } from '../core/kind-limits.ts';
import type { Pause, PauseScope } from '../core/pauses.ts';
import { parseRate } from '../core/rate.ts';
import { create } from '@bufbuild/protobuf';
import type { NewSchedule, Schedule, ScheduleChanges } from '../core/schedules.ts';
import {
  JobState,
  SYSTEM_SCOPE,
  tenantScope,
  type EventTransition,
  type JobRecord,
  type LeaseFence,
  type NewJob,
  type QueueScope,
} from '../core/types.ts';
import { checkWireInteger, type WireInteger } from '../wire/integers.ts';
import { orderDeadPolicyToWire, stateFromWire, supersedeModeToWire } from '../wire/states.ts';
import {
  CheckpointRequestSchema,
  CompleteRequestSchema,
  FailRequestSchema,
  HeartbeatRequestSchema,
  NewJobSchema,
  OrderDeadPolicy as WireOrderDeadPolicy,
  ReleaseRequestSchema,
  ScheduleSchema,
  ScopeSchema,
  type CheckpointRequest,
  type CompleteRequest,
  type FailRequest,
  type HeartbeatRequest,
  type ReleaseRequest,
  type Job,
  type NewJob as WireNewJob,
  type Schedule as WireSchedule,
  type Scope,
  type UpdateScheduleRequest,
} from '../gen/telha/v1/queue_pb.ts';

/** A job as the SDK returns it: the engine's record, plus the attempt ceiling that applies to it. */
export type RemoteJob = JobRecord & { readonly effectiveMaxAttempts: number };

export function jobFromWire(job: Job): RemoteJob {
  return {
    jobId: job.jobId,
    tenant: job.tenant === '' ? null : job.tenant,
    kind: job.kind,
    payload: job.payload,
    priority: job.priority,
    createdAt: Number(job.createdAtUs),
    state: stateFromWire(job.state) ?? JobState.Pending,
    attempts: job.attempts,
    leaseGeneration: Number(job.leaseGeneration),
    workerId: job.workerId ?? null,
    leaseDeadline: job.leaseDeadlineUs === undefined ? null : Number(job.leaseDeadlineUs),
    notBefore: job.notBeforeUs === undefined ? null : Number(job.notBeforeUs),
    idempotencyKey: job.idempotencyKey ?? null,
    maxAttempts: job.maxAttempts ?? null,
    continuation: job.continuation ?? null,
    events: job.events.map((e) => ({
      at: Number(e.atUs),
      transition: e.transition as EventTransition,
      detail: e.detail ?? null,
    })),
    attemptDeadline: job.attemptDeadlineUs === undefined ? null : Number(job.attemptDeadlineUs),
    timeoutSecs: job.timeoutSecs ?? null,
    result: job.result ?? null,
    progress: job.progress ?? null,
    traceContext:
      job.traceContext === undefined
        ? null
        : { traceparent: job.traceContext.traceparent, tracestate: job.traceContext.tracestate || null },
    supersedeKey: job.supersedeKey ?? null,
    supersededBy: job.supersededBy ?? null,
    debounceUntil: job.debounceUntilUs === undefined ? null : Number(job.debounceUntilUs),
    orderKey: job.orderKey ?? null,
    orderReleaseOnDead: job.orderOnDead === WireOrderDeadPolicy.RELEASE,
    // The server keeps a waiting job's own delay to itself; `notBefore` says it waits (`ORDER_WAIT`).
    orderGate: null,
    effectiveMaxAttempts: job.effectiveMaxAttempts,
  };
}

/**
 * A job request as the wire carries it; a string payload travels as its UTF-8 bytes. A number
 * the wire cannot carry is `invalid_argument`, its field named after `prefix` (`jobs[2].`).
 */
export function newJobToWire(job: NewJob, prefix = ''): WireNewJob {
  const integer = (field: string, value: number, type: WireInteger): number =>
    checkWireInteger(`${prefix}${field}`, value, type);
  return create(NewJobSchema, {
    kind: job.kind,
    payload:
      typeof job.payload === 'string' ? new TextEncoder().encode(job.payload) : (job.payload ?? new Uint8Array(0)),
    ...(job.priority === undefined ? {} : { priority: integer('priority', job.priority, 'uint32') }),
    ...(job.delayMs === undefined ? {} : { delayMs: BigInt(integer('delay_ms', Math.trunc(job.delayMs), 'int64')) }),
    ...(job.notBefore === undefined
      ? {}
      : { notBeforeUs: BigInt(integer('not_before_us', Math.trunc(job.notBefore), 'int64')) }),
    ...(job.maxAttempts === undefined ? {} : { maxAttempts: integer('max_attempts', job.maxAttempts, 'uint32') }),
    ...(job.idempotencyKey === undefined ? {} : { idempotencyKey: job.idempotencyKey }),
    ...(job.timeoutSecs === undefined ? {} : { timeoutSecs: integer('timeout_secs', job.timeoutSecs, 'uint32') }),
    ...(job.traceContext === undefined
      ? {}
      : {
          traceContext: {
            traceparent: job.traceContext.traceparent,
            tracestate: job.traceContext.tracestate ?? '',
          },
        }),
    ...(job.supersedeKey === undefined ? {} : { supersedeKey: job.supersedeKey }),
    ...(job.supersede === undefined ? {} : { supersede: supersedeModeToWire(job.supersede) }),
    ...(job.debounceMs === undefined
      ? {}
      : { debounceMs: BigInt(integer('debounce_ms', Math.trunc(job.debounceMs), 'int64')) }),
    ...(job.debounceMaxMs === undefined
      ? {}
      : { debounceMaxMs: BigInt(integer('debounce_max_ms', Math.trunc(job.debounceMaxMs), 'int64')) }),
    ...(job.orderKey === undefined ? {} : { orderKey: job.orderKey }),
    ...(job.orderOnDead === undefined ? {} : { orderOnDead: orderDeadPolicyToWire(job.orderOnDead) }),
  });
}

export function scopeToWire(scope: QueueScope | undefined): Scope | undefined {
  if (scope === undefined) return undefined;
  return create(ScopeSchema, {
    target: scope.type === 'system' ? { case: 'system', value: true } : { case: 'tenant', value: scope.tenant },
  });
}

/** The proof of a lease as the wire carries it. */
export function wireFence(
  jobId: string,
  fence: LeaseFence,
): { jobId: string; workerId: string; leaseGeneration: bigint } {
  return {
    jobId,
    workerId: fence.workerId,
    leaseGeneration: BigInt(checkWireInteger('fence.lease_generation', fence.leaseGeneration, 'uint64')),
  };
}

/** A completion as the wire carries it: the unary Complete, a CompleteEach item, a Work stream result. */
export function completeToWire(item: {
  readonly jobId: string;
  readonly fence: LeaseFence;
  readonly successors?: readonly NewJob[];
  readonly result?: Uint8Array;
}): CompleteRequest {
  return create(CompleteRequestSchema, {
    fence: wireFence(item.jobId, item.fence),
    successors: (item.successors ?? []).map((job, i) => newJobToWire(job, `successors[${i}].`)),
    ...(item.result === undefined ? {} : { result: item.result }),
  });
}

/** A failure as the wire carries it: the unary Fail, a FailEach item, a Work stream result. */
export function failToWire(item: {
  readonly jobId: string;
  readonly fence: LeaseFence;
  readonly error: string;
  readonly permanent?: boolean;
}): FailRequest {
  return create(FailRequestSchema, {
    fence: wireFence(item.jobId, item.fence),
    error: item.error,
    permanent: item.permanent ?? false,
  });
}

/** A heartbeat as the wire carries it: the unary Heartbeat, a Work stream heartbeat. */
export function heartbeatToWire(item: {
  readonly jobId: string;
  readonly fence: LeaseFence;
  readonly progress?: string;
}): HeartbeatRequest {
  return create(HeartbeatRequestSchema, {
    fence: wireFence(item.jobId, item.fence),
    ...(item.progress === undefined ? {} : { progress: item.progress }),
  });
}

/** A checkpoint as the wire carries it: the unary Checkpoint, a Work stream checkpoint. */
export function checkpointToWire(item: {
  readonly jobId: string;
  readonly fence: LeaseFence;
  readonly continuation: Uint8Array;
}): CheckpointRequest {
  return create(CheckpointRequestSchema, { fence: wireFence(item.jobId, item.fence), continuation: item.continuation });
}

/** A job handed back as the wire carries it: the unary Release, a ReleaseEach item, a Work stream release. */
export function releaseToWire(item: { readonly jobId: string; readonly fence: LeaseFence }): ReleaseRequest {
  return create(ReleaseRequestSchema, { fence: wireFence(item.jobId, item.fence) });
}

/** A schedule as the SDK returns it: the engine's type. */
export function scheduleFromWire(schedule: WireSchedule | undefined): Schedule {
  if (schedule === undefined) throw new Error('server sent no schedule');
  const job = schedule.job;
  const target = schedule.scope?.target;
  return {
    scope: target?.case === 'tenant' ? tenantScope(target.value) : SYSTEM_SCOPE,
    name: schedule.name,
    cron: schedule.cron ?? null,
    timezone: schedule.timezone ?? null,
    everySecs: schedule.everySecs ?? null,
    job: {
      kind: job?.kind ?? '',
      payload: job?.payload ?? new Uint8Array(0),
      priority: job?.priority ?? 128,
      maxAttempts: job?.maxAttempts ?? null,
      timeoutSecs: job?.timeoutSecs ?? null,
    },
    paused: schedule.paused,
    nextDueAt: schedule.nextDueUs === undefined ? null : Number(schedule.nextDueUs),
    lastDueAt: schedule.lastDueUs === undefined ? null : Number(schedule.lastDueUs),
    createdAt: Number(schedule.createdAtUs),
    updatedAt: Number(schedule.updatedAtUs),
  };
}

/** A schedule to create as the wire carries it. */
export function newScheduleToWire(schedule: NewSchedule, scope: QueueScope | undefined): WireSchedule {
  return create(ScheduleSchema, {
    ...(scope === undefined ? {} : { scope: scopeToWire(scope) }),
    name: schedule.name,
    ...(schedule.cron === undefined ? {} : { cron: schedule.cron }),
    ...(schedule.timezone === undefined ? {} : { timezone: schedule.timezone }),
    ...(schedule.everySecs === undefined
      ? {}
      : { everySecs: checkWireInteger('every_secs', schedule.everySecs, 'uint32') }),
    job: newJobToWire(schedule.job, 'job.'),
    paused: schedule.paused ?? false,
  });
}

/** The fields of an UpdateSchedule, beside its scope and name. */
export function scheduleChangesToWire(
  changes: ScheduleChanges,
): Pick<UpdateScheduleRequest, 'cron' | 'timezone' | 'everySecs' | 'job' | 'paused'> {
  return {
    ...(changes.cron === undefined ? {} : { cron: changes.cron }),
    ...(changes.timezone === undefined ? {} : { timezone: changes.timezone }),
    ...(changes.everySecs === undefined
      ? {}
      : { everySecs: checkWireInteger('every_secs', changes.everySecs, 'uint32') }),
    ...(changes.job === undefined ? {} : { job: newJobToWire(changes.job, 'job.') }),
    ...(changes.paused === undefined ? {} : { paused: changes.paused }),
  };
}

/** A pause as the server sent it. */
export function pauseFromWire(pause: KindPause | undefined): Pause {
  if (pause === undefined) throw new Error('server sent no pause');
  const target = pause.scope?.target;
  const scope: PauseScope = pause.everywhere
    ? 'everywhere'
    : target?.case === 'tenant'
      ? tenantScope(target.value)
      : SYSTEM_SCOPE;
  return { scope, kindPrefix: pause.kindPrefix, pausedAt: Number(pause.pausedAtUs), by: pause.pausedBy };
}

/** A tenant limit as the server sent it; `leased` and `tokens` as of the call. */
export function tenantLimitFromWire(limit: WireTenantLimit | undefined): TenantLimitStatus {
  if (limit === undefined) throw new Error('server sent no tenant limit');
  return {
    tenant: limit.tenant,
    concurrency: limit.concurrency ?? null,
    rate: limit.rate === undefined ? null : parseRate(limit.rate),
    weight: limit.weight,
    setAt: Number(limit.setAtUs),
    by: limit.setBy,
    leased: Number(limit.leased),
    tokens: limit.tokens === undefined ? null : Number(limit.tokens),
  };
}

/** A kind limit as the server sent it; `leased` and `tokens` as of the call. */
export function kindLimitFromWire(limit: WireKindLimit | undefined): KindLimitStatus {
  if (limit === undefined) throw new Error('server sent no kind limit');
  return {
    kindPrefix: limit.kindPrefix,
    concurrency: limit.concurrency ?? null,
    rate: limit.rate === undefined ? null : parseRate(limit.rate),
    setAt: Number(limit.setAtUs),
    by: limit.setBy,
    leased: Number(limit.leased),
    tokens: limit.tokens === undefined ? null : Number(limit.tokens),
  };
}
