/**
 * The workers' role (permission `work`): leases and everything a holder does with one, as unary
 * calls and as the settlements a Work stream carries.
 */
import { invalidArgument } from '../../core/errors.ts';
import { MAX_LEASE_BATCH, MAX_SETTLE_BATCH } from '../../core/bounds.ts';
import type { ItemResult, JobRecord, ScopeFilter } from '../../core/types.ts';
import { eachOnItsOwn } from '../../engine/each.ts';
import type { Completion, Failure, Release } from '../../engine/queue-options.ts';
import { create } from '@bufbuild/protobuf';
import {
  LeaseOutcomeSchema,
  type CheckpointRequest,
  type CompleteRequest,
  type FailRequest,
  type HeartbeatRequest,
  type ItemOutcome,
  type LeaseOutcome,
  type ReleaseRequest,
} from '../../gen/telha/v1/queue_pb.ts';
import { resolveScope } from '../../edge/auth.ts';
import { completeOptionsFromWire, newJobFromWire, scopeFromWire } from '../convert.ts';
import { fenceFromWire, OK_OUTCOME, workScope, type HandlerKit, type QueueServiceImpl } from './kit.ts';

type WorkMethod =
  'lease' | 'heartbeat' | 'checkpoint' | 'complete' | 'fail' | 'release' | 'completeEach' | 'failEach' | 'releaseEach';

/** A Work stream's settlements and lease extensions, each item answered on its own. */
export interface Settlements {
  completeEach(items: readonly CompleteRequest[], scope: ScopeFilter): Promise<ItemOutcome[]>;
  failEach(items: readonly FailRequest[], scope: ScopeFilter): Promise<ItemOutcome[]>;
  releaseEach(items: readonly ReleaseRequest[], scope: ScopeFilter): Promise<ItemOutcome[]>;
  heartbeatEach(items: readonly HeartbeatRequest[], scope: ScopeFilter): Promise<LeaseOutcome[]>;
  checkpointEach(items: readonly CheckpointRequest[], scope: ScopeFilter): Promise<LeaseOutcome[]>;
}

export interface WorkHandlers {
  readonly unary: Pick<QueueServiceImpl, WorkMethod>;
  readonly settlements: Settlements;
}

export function workHandlers(kit: HandlerKit): WorkHandlers {
  const { queue, config, logger, handle, toWire, errorOutcome } = kit;

  /**
   * The items of a batch call (CompleteEach, FailEach, ReleaseEach, a Work message's results),
   * each answered on its own: an item's error becomes its outcome, not the call's. Items that do
   * not even convert fail here; the rest go to the queue as one batch.
   */
  async function settleEach<T, R>(
    items: readonly T[],
    convert: (item: T) => R,
    apply: (converted: readonly R[]) => Promise<ItemResult<unknown>[]>,
  ): Promise<ItemOutcome[]> {
    if (items.length > MAX_SETTLE_BATCH) throw invalidArgument('items', `at most ${MAX_SETTLE_BATCH} items per call`);
    const results = await eachOnItsOwn(items, convert, apply);
    return results.map((result, index) => (result.ok ? OK_OUTCOME : errorOutcome(result.error, `items[${index}]`)));
  }

  const completeEach = (items: readonly CompleteRequest[], scope: ScopeFilter): Promise<ItemOutcome[]> =>
    settleEach(
      items,
      (item): Completion => {
        // Named fields, not spreads of the two: Node 20's spreads are slow on this path
        // (bench/RESULTS.md, "The measurements behind the code's choices").
        const { jobId, fence } = fenceFromWire(item.fence);
        const options = completeOptionsFromWire(
          item.successors.map((job, j) => newJobFromWire(job, `successors[${j}]`)),
          item,
        );
        return options.result === undefined
          ? { jobId, fence, successors: options.successors }
          : { jobId, fence, successors: options.successors, result: options.result };
      },
      (completions) => queue.completeEach(completions, scope),
    );

  const failEach = (items: readonly FailRequest[], scope: ScopeFilter): Promise<ItemOutcome[]> =>
    settleEach(
      items,
      (item): Failure => {
        const { jobId, fence } = fenceFromWire(item.fence);
        return { jobId, fence, error: item.error, permanent: item.permanent };
      },
      (failures) => queue.failEach(failures, scope),
    );

  const releaseEach = (items: readonly ReleaseRequest[], scope: ScopeFilter): Promise<ItemOutcome[]> =>
    settleEach(
      items,
      (item): Release => fenceFromWire(item.fence),
      (releases) => queue.releaseEach(releases, scope),
    );

  /** A heartbeat (progress included) and a checkpoint, once: as unary calls and on a Work stream. */
  const heartbeatOf = (req: HeartbeatRequest, scope: ScopeFilter): Promise<JobRecord> => {
    const { jobId, fence } = fenceFromWire(req.fence);
    return queue.heartbeat(jobId, fence, req.progress === undefined ? {} : { progress: req.progress }, scope);
  };
  const checkpointOf = (req: CheckpointRequest, scope: ScopeFilter): Promise<JobRecord> => {
    const { jobId, fence } = fenceFromWire(req.fence);
    return queue.checkpoint(jobId, fence, req.continuation, scope);
  };

  /**
   * Lease extensions sent on a Work stream, each answered on its own as its unary call would be
   * (an item's error is its outcome); those of one message reach the store in one turn, so group
   * commit writes them together.
   */
  async function extendEach<T>(items: readonly T[], extend: (item: T) => Promise<JobRecord>): Promise<LeaseOutcome[]> {
    if (items.length > MAX_SETTLE_BATCH) throw invalidArgument('items', `at most ${MAX_SETTLE_BATCH} items per call`);
    return Promise.all(
      items.map(async (item, index) => {
        try {
          const job = await extend(item);
          return create(LeaseOutcomeSchema, {
            outcome: OK_OUTCOME,
            leaseDeadlineUs: BigInt(job.leaseDeadline ?? 0),
          });
        } catch (error) {
          return create(LeaseOutcomeSchema, { outcome: errorOutcome(error, `items[${index}]`) });
        }
      }),
    );
  }

  const unary: Pick<QueueServiceImpl, WorkMethod> = {
    lease: handle(
      'lease',
      'work',
      async (req, { principal, ctx }) => {
        const scope = resolveScope(principal, scopeFromWire(req.scope), true);
        const limit = req.limit === 0 ? 1 : req.limit;
        if (limit > MAX_LEASE_BATCH) throw invalidArgument('limit', `must be at most ${MAX_LEASE_BATCH}`);
        const waitMs = Math.min(req.waitMs, config.max_lease_wait_ms);
        const signal = AbortSignal.any([ctx.signal, kit.shutdown]);
        const jobs = await queue.lease({ workerId: req.workerId, kinds: req.kinds, scope, limit, waitMs, signal });
        for (const job of jobs) {
          logger.debug({ jobId: job.jobId, kind: job.kind, tenant: job.tenant, workerId: job.workerId }, 'leased');
        }
        return { jobs: jobs.map(toWire) };
      },
      (req) => (req.waitMs > 0 ? kit.parkedCalls : kit.unaryCalls),
    ),

    heartbeat: handle('heartbeat', 'work', async (req, { principal }) => {
      const job = await heartbeatOf(req, workScope(principal));
      return { leaseDeadlineUs: BigInt(job.leaseDeadline ?? 0) };
    }),

    checkpoint: handle('checkpoint', 'work', async (req, { principal }) => {
      const job = await checkpointOf(req, workScope(principal));
      return { leaseDeadlineUs: BigInt(job.leaseDeadline ?? 0) };
    }),

    complete: handle('complete', 'work', async (req, { principal }) => {
      const { jobId, fence } = fenceFromWire(req.fence);
      const successors = req.successors.map((job, i) => newJobFromWire(job, `successors[${i}]`));
      const result = await queue.complete(jobId, fence, completeOptionsFromWire(successors, req), workScope(principal));
      logger.debug({ jobId, kind: result.job.kind, tenant: result.job.tenant, workerId: fence.workerId }, 'completed');
      return { job: toWire(result.job), successors: result.successors.map(kit.resultToWire) };
    }),

    fail: handle('fail', 'work', async (req, { principal }) => {
      const { jobId, fence } = fenceFromWire(req.fence);
      const job = await queue.fail(jobId, fence, { error: req.error, permanent: req.permanent }, workScope(principal));
      logger.info(
        {
          jobId,
          kind: job.kind,
          tenant: job.tenant,
          workerId: fence.workerId,
          attempts: job.attempts,
          permanent: req.permanent,
        },
        'job failed',
      );
      return { job: toWire(job) };
    }),

    release: handle('release', 'work', async (req, { principal }) => {
      const { jobId, fence } = fenceFromWire(req.fence);
      const job = await queue.release(jobId, fence, workScope(principal));
      logger.debug({ jobId, kind: job.kind, tenant: job.tenant, workerId: fence.workerId }, 'released');
      return { job: toWire(job) };
    }),

    completeEach: handle('completeEach', 'work', async (req, { principal }) => ({
      outcomes: await completeEach(req.items, workScope(principal)),
    })),

    failEach: handle('failEach', 'work', async (req, { principal }) => ({
      outcomes: await failEach(req.items, workScope(principal)),
    })),

    releaseEach: handle('releaseEach', 'work', async (req, { principal }) => ({
      outcomes: await releaseEach(req.items, workScope(principal)),
    })),
  };

  return {
    unary,
    settlements: {
      completeEach,
      failEach,
      releaseEach,
      heartbeatEach: (items, scope) => extendEach(items, (req) => heartbeatOf(req, scope)),
      checkpointEach: (items, scope) => extendEach(items, (req) => checkpointOf(req, scope)),
    },
  };
}
