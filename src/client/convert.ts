/** Wire messages to the engine's record type, so SDK users get the same `JobRecord`. */
import { create } from '@bufbuild/protobuf';
import {
  JobState as CoreState,
  type EventTransition,
  type JobRecord,
  type LeaseFence,
  type NewJob as CoreNewJob,
  type QueueScope,
} from '../core/types.ts';
import { stateFromWire } from '../wire/states.ts';
import {
  CompleteRequestSchema,
  FailRequestSchema,
  NewJobSchema,
  ReleaseRequestSchema,
  ScopeSchema,
  type CompleteRequest,
  type FailRequest,
  type ReleaseRequest,
  type Job,
  type NewJob,
  type Scope,
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
    state: stateFromWire(job.state) ?? CoreState.Pending,
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
    effectiveMaxAttempts: job.effectiveMaxAttempts,
  };
}

/** A job request as the wire carries it; a string payload travels as its UTF-8 bytes. */
export function newJobToWire(job: CoreNewJob): NewJob {
  return create(NewJobSchema, {
    kind: job.kind,
    payload:
      typeof job.payload === 'string' ? new TextEncoder().encode(job.payload) : (job.payload ?? new Uint8Array(0)),
    ...(job.priority === undefined ? {} : { priority: job.priority }),
    ...(job.delayMs === undefined ? {} : { delayMs: BigInt(Math.trunc(job.delayMs)) }),
    ...(job.notBefore === undefined ? {} : { notBeforeUs: BigInt(Math.trunc(job.notBefore)) }),
    ...(job.maxAttempts === undefined ? {} : { maxAttempts: job.maxAttempts }),
    ...(job.idempotencyKey === undefined ? {} : { idempotencyKey: job.idempotencyKey }),
    ...(job.timeoutSecs === undefined ? {} : { timeoutSecs: job.timeoutSecs }),
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
  return { jobId, workerId: fence.workerId, leaseGeneration: BigInt(fence.leaseGeneration) };
}

/** A completion as the wire carries it: the unary Complete, a CompleteEach item, a Work stream result. */
export function completeToWire(item: {
  readonly jobId: string;
  readonly fence: LeaseFence;
  readonly successors?: readonly CoreNewJob[];
  readonly result?: Uint8Array;
}): CompleteRequest {
  return create(CompleteRequestSchema, {
    fence: wireFence(item.jobId, item.fence),
    successors: (item.successors ?? []).map(newJobToWire),
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

/** A job handed back as the wire carries it: the unary Release, a ReleaseEach item, a Work stream release. */
export function releaseToWire(item: { readonly jobId: string; readonly fence: LeaseFence }): ReleaseRequest {
  return create(ReleaseRequestSchema, { fence: wireFence(item.jobId, item.fence) });
}
