/**
 * What every role's handler table is built from: the queue, the one `handle` wrapper (admission,
 * authentication, authorization, one error mapping) and the conversions all roles share.
 */
import type { ServerConfig } from '../../core/config.ts';
import { invalidArgument } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { ANY_SCOPE, type EnqueueResult, type JobRecord, type LeaseFence, type ScopeFilter } from '../../core/types.ts';
import type { Queue } from '../../engine/queue.ts';
import { create } from '@bufbuild/protobuf';
import {
  ItemOutcomeSchema,
  type EnqueueResult as WireEnqueueResult,
  type Fence,
  type ItemOutcome,
  type Job,
} from '../../gen/telha/v1/queue_pb.ts';
import type { MethodName, RequestOf, ResponseInitOf } from '../../wire/service.ts';
import { resolveScope, type Permission, type Principal } from '../../edge/auth.ts';
import { toSafeNumber } from '../convert.ts';
import type { CallBudget } from '../budgets.ts';

/** What a handler needs from the transport: the caller's credentials and a signal for a call that went away. */
export interface CallContext {
  readonly authorization: string | null;
  readonly signal: AbortSignal;
}

export type QueueServiceImpl = {
  readonly [K in MethodName]: (req: RequestOf<K>, ctx: CallContext) => Promise<ResponseInitOf<K>>;
};

/** An admitted, authenticated and authorized call. */
export interface Call {
  readonly principal: Principal;
  readonly ctx: CallContext;
}

/** Wrap a method's work in admission (`budgetOf`, the unary budget by default), authentication, authorization and the error mapping. */
export type Handle = <K extends MethodName>(
  method: K,
  permission: Permission,
  run: (req: RequestOf<K>, call: Call) => Promise<ResponseInitOf<K>>,
  budgetOf?: (req: RequestOf<K>) => CallBudget,
) => (req: RequestOf<K>, ctx: CallContext) => Promise<ResponseInitOf<K>>;

export interface HandlerKit {
  readonly queue: Queue;
  readonly config: ServerConfig;
  readonly logger: Logger;
  /** Aborts parked lease calls when the server shuts down, so they return at once. */
  readonly shutdown: AbortSignal;
  readonly handle: Handle;
  /** Calls answered at once: every unary call but a long-poll Lease. */
  readonly unaryCalls: CallBudget;
  /** Long-poll Leases, Work, Watch and Produce streams: held while there is nothing to do. */
  readonly parkedCalls: CallBudget;
  readonly toWire: (job: JobRecord) => Job;
  readonly resultToWire: (result: EnqueueResult) => WireEnqueueResult;
  /** One item's error as its outcome in a batch answer. */
  readonly errorOutcome: (error: unknown, item: string) => ItemOutcome;
}

/** Every accepted item's outcome: one message shared by all (nothing writes to a message once made). */
export const OK_OUTCOME: ItemOutcome = Object.freeze(create(ItemOutcomeSchema, { code: 0 }));

export function fenceFromWire(fence: Fence | undefined): { jobId: string; fence: LeaseFence } {
  if (fence === undefined) throw invalidArgument('fence', 'is required');
  return {
    jobId: fence.jobId,
    fence: { workerId: fence.workerId, leaseGeneration: toSafeNumber(fence.leaseGeneration, 'fence.lease_generation') },
  };
}

/** Workers and operators submit across scopes; a tenant could only ever reach its own. */
export const workScope = (principal: Principal): ScopeFilter =>
  principal.role === 'tenant' ? resolveScope(principal, null, false) : ANY_SCOPE;

/** `{ key: value }`, or nothing when there is no value (optional fields stay absent, not undefined). */
export function optional<K extends string, V>(key: K, value: V | null): { [P in K]?: V } {
  return (value === null ? {} : { [key]: value }) as { [P in K]?: V };
}
