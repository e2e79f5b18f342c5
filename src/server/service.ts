/**
 * The QueueService handlers: authenticate, authorize, translate, call the
 * engine, translate back. No queue logic lives here.
 */
import type { ServerConfig } from '../core/config.ts';
import { ErrorCode, invalidArgument, TelhaError } from '../core/errors.ts';
import { effectiveMaxAttempts } from '../core/transitions.ts';
import type { Logger } from '../core/logger.ts';
import { MAX_LEASE_BATCH, MAX_SETTLE_BATCH } from '../core/bounds.ts';
import {
  ANY_SCOPE,
  type EnqueueResult,
  type ItemResult,
  type JobRecord,
  type LeaseFence,
  type ScopeFilter,
} from '../core/types.ts';
import { eachOnItsOwn } from '../engine/each.ts';
import type { Queue } from '../engine/queue.ts';
import type { Completion, Failure, Release } from '../engine/queue-options.ts';
import { create } from '@bufbuild/protobuf';
import {
  EnqueueEachAnswerSchema,
  ItemOutcomeSchema,
  LeaseOutcomeSchema,
  type CheckpointRequest,
  type CompleteRequest,
  type HeartbeatRequest,
  type LeaseOutcome,
  type EnqueueResult as WireEnqueueResult,
  type FailRequest,
  type Fence,
  type ReleaseRequest,
  type ItemOutcome,
  type Job,
  type WatchRequest,
} from '../gen/telha/v1/queue_pb.ts';
import type { MethodName, ProduceMethod, RequestOf, ResponseInitOf } from '../wire/service.ts';
import { listOrderFromWire, stateToWire } from '../wire/states.ts';
import {
  pauseScope,
  principalLabel,
  requirePermission,
  resolveScope,
  writeScope,
  type Authenticator,
  type Permission,
  type Principal,
} from '../edge/auth.ts';
import {
  completeOptionsFromWire,
  enqueueResultToWire,
  jobToWire,
  newJobFromWire,
  newScheduleFromWire,
  scheduleChangesFromWire,
  kindLimitToWire,
  pauseToWire,
  scheduleToWire,
  scopeFromWire,
  stateFilterFromWire,
  toSafeNumber,
} from './convert.ts';
import { describeError, type WireStatus } from '../edge/status.ts';
import {
  openProduceSession,
  type ProduceAnswer,
  type ProduceEnqueue,
  type ProduceSession,
  type ProduceStream,
} from './produce-session.ts';
import { runWatch, type WatchStream } from './watch.ts';
import { openWorkSession, type WorkSession, type WorkStream } from './work-session.ts';

export interface ServiceDeps {
  readonly queue: Queue;
  readonly auth: Authenticator;
  readonly config: ServerConfig;
  readonly logger: Logger;
  /** Aborts parked lease calls when the server shuts down, so they return at once. */
  readonly shutdown: AbortSignal;
}

/** What a handler needs from the transport: the caller's credentials and a signal for a call that went away. */
export interface CallContext {
  readonly authorization: string | null;
  readonly signal: AbortSignal;
}

/** A handler failed: the status to send, already logged where it needed to be. */
export class CallFailed extends Error {
  constructor(readonly status: WireStatus) {
    super(status.message);
  }
}

export type QueueServiceImpl = {
  readonly [K in MethodName]: (req: RequestOf<K>, ctx: CallContext) => Promise<ResponseInitOf<K>>;
};

interface Call {
  readonly principal: Principal;
  readonly ctx: CallContext;
}

/** Every accepted item's outcome: one message shared by all (nothing writes to a message once made). */
const OK_OUTCOME: ItemOutcome = Object.freeze(create(ItemOutcomeSchema, { code: 0 }));

function fenceFromWire(fence: Fence | undefined): { jobId: string; fence: LeaseFence } {
  if (fence === undefined) throw invalidArgument('fence', 'is required');
  return {
    jobId: fence.jobId,
    fence: { workerId: fence.workerId, leaseGeneration: toSafeNumber(fence.leaseGeneration, 'fence.lease_generation') },
  };
}

/** The unary handlers, the Work stream's sessions and Watch streams. */
export interface QueueServiceHandlers {
  readonly unary: QueueServiceImpl;
  openWork(stream: WorkStream): WorkSession;
  openProduce(stream: ProduceStream): ProduceSession;
  watch(request: WatchRequest, stream: WatchStream): void;
}

export function createQueueService(deps: ServiceDeps): QueueServiceHandlers {
  const { queue, auth, config, logger } = deps;
  const maxAttempts = (job: JobRecord): number => effectiveMaxAttempts(job, { config: queue.config.jobs });
  const toWire = (job: JobRecord): Job => jobToWire(job, maxAttempts(job));
  const resultToWire = (result: EnqueueResult): WireEnqueueResult =>
    enqueueResultToWire(result, maxAttempts(result.job));
  // Calls that wait for work (a long-poll Lease, a Work stream) may be held for as long as
  // there is none, so they have a budget of their own: idle workers filling it leave every
  // unary call, a producer's Enqueue or an operator's Counts, its own.
  const unaryCalls = new CallBudget(config.max_concurrent_calls, 'calls in flight', 'server.max_concurrent_calls');
  const parkedCalls = new CallBudget(
    config.max_parked_calls,
    'parked calls (long-poll Leases, Work, Watch and Produce streams)',
    'server.max_parked_calls',
  );
  const watchStreams = new BudgetPerPrincipal(
    queue.config.watch.max_streams_per_principal,
    'open Watch streams',
    'watch.max_streams_per_principal',
  );

  /** Every handler runs through here: admission, authentication, authorization, one error mapping. */
  function handle<K extends MethodName>(
    method: K,
    permission: Permission,
    run: (req: RequestOf<K>, call: Call) => Promise<ResponseInitOf<K>>,
    budgetOf: (req: RequestOf<K>) => CallBudget = () => unaryCalls,
  ): (req: RequestOf<K>, ctx: CallContext) => Promise<ResponseInitOf<K>> {
    return async (req, ctx) => {
      let principal: Principal | null = null;
      let release: (() => void) | null = null;
      try {
        release = budgetOf(req).admit();
        principal = auth.authenticate(ctx.authorization);
        requirePermission(principal, permission);
        return await run(req, { principal, ctx });
      } catch (error) {
        throw new CallFailed(
          describeError(error, logger, { method, caller: principal?.name ?? null, tenant: principal?.tenant ?? null }),
        );
      } finally {
        release?.();
      }
    };
  }

  /** One item's error as its outcome in a batch answer. */
  const errorOutcome = (error: unknown, item: string): ItemOutcome => {
    const status = describeError(error, logger, { item });
    return create(ItemOutcomeSchema, {
      code: status.code,
      message: status.message,
      reason: status.reason ?? '',
      field: status.field ?? '',
    });
  };

  /**
   * The items of a batch call (CompleteEach, FailEach, ReleaseEach, a Work
   * message's results), each answered on its own: an item's error becomes its outcome,
   * not the call's. Items that do not even convert fail here; the rest go to
   * the queue as one batch.
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

  /** Workers and operators submit across scopes; a tenant could only ever reach its own. */
  const workScope = (principal: Principal): ScopeFilter =>
    principal.role === 'tenant' ? resolveScope(principal, null, false) : ANY_SCOPE;

  /** The enqueue calls, once: as unary calls and as the requests of a Produce stream. */
  const enqueues: {
    readonly [K in ProduceMethod]: (req: RequestOf<K>, principal: Principal) => Promise<ResponseInitOf<K>>;
  } = {
    enqueue: async (req, principal) => {
      const scope = writeScope(resolveScope(principal, scopeFromWire(req.scope), false));
      const result = await queue.enqueue(newJobFromWire(req.job, 'job'), scope);
      if (result.created) {
        logger.debug({ jobId: result.job.jobId, kind: result.job.kind, tenant: result.job.tenant }, 'enqueued');
      }
      return { result: resultToWire(result) };
    },

    enqueueBatch: async (req, principal) => {
      const scope = writeScope(resolveScope(principal, scopeFromWire(req.scope), false));
      const jobs = req.jobs.map((job, i) => newJobFromWire(job, `jobs[${i}]`));
      const results = await queue.enqueueBatch(jobs, scope);
      return { results: results.map(resultToWire) };
    },

    enqueueEach: async (req, principal) => {
      const scope = writeScope(resolveScope(principal, scopeFromWire(req.scope), false));
      const results = await eachOnItsOwn(
        req.jobs,
        (job) => newJobFromWire(job, 'job'),
        (jobs) => queue.enqueueEach(jobs, scope),
      );
      const answers = results.map((result, index) =>
        create(EnqueueEachAnswerSchema, {
          answer: result.ok
            ? { case: 'result', value: resultToWire(result.value) }
            : { case: 'error', value: errorOutcome(result.error, `jobs[${index}]`) },
        }),
      );
      return { answers };
    },
  };

  /** A Produce stream's request, run as its unary call. */
  async function produce(request: ProduceEnqueue, principal: Principal): Promise<ProduceAnswer> {
    switch (request.case) {
      case 'single':
        return { case: 'single', value: await enqueues.enqueue(request.value, principal) };
      case 'batch':
        return { case: 'batch', value: await enqueues.enqueueBatch(request.value, principal) };
      case 'each':
        return { case: 'each', value: await enqueues.enqueueEach(request.value, principal) };
      default: {
        const never: never = request;
        throw invalidArgument('enqueue', `unknown request ${String(never)}`);
      }
    }
  }

  const unary: QueueServiceImpl = {
    enqueue: handle('enqueue', 'enqueue', (req, { principal }) => enqueues.enqueue(req, principal)),
    enqueueBatch: handle('enqueueBatch', 'enqueue', (req, { principal }) => enqueues.enqueueBatch(req, principal)),
    enqueueEach: handle('enqueueEach', 'enqueue', (req, { principal }) => enqueues.enqueueEach(req, principal)),

    lease: handle(
      'lease',
      'work',
      async (req, { principal, ctx }) => {
        const scope = resolveScope(principal, scopeFromWire(req.scope), true);
        const limit = req.limit === 0 ? 1 : req.limit;
        if (limit > MAX_LEASE_BATCH) throw invalidArgument('limit', `must be at most ${MAX_LEASE_BATCH}`);
        const waitMs = Math.min(req.waitMs, config.max_lease_wait_ms);
        const signal = AbortSignal.any([ctx.signal, deps.shutdown]);
        const jobs = await queue.lease({ workerId: req.workerId, kinds: req.kinds, scope, limit, waitMs, signal });
        for (const job of jobs) {
          logger.debug({ jobId: job.jobId, kind: job.kind, tenant: job.tenant, workerId: job.workerId }, 'leased');
        }
        return { jobs: jobs.map(toWire) };
      },
      (req) => (req.waitMs > 0 ? parkedCalls : unaryCalls),
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
      return { job: toWire(result.job), successors: result.successors.map(resultToWire) };
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

    show: handle('show', 'read', async (req, { principal }) => {
      const job = await queue.show(req.jobId, resolveScope(principal, null, true));
      return { job: toWire(job) };
    }),

    list: handle('list', 'read', async (req, { principal }) => {
      const page = await queue.list({
        scope: resolveScope(principal, scopeFromWire(req.scope), true),
        ...optional('state', stateFilterFromWire(req.state, 'state')),
        ...(req.kindPrefix === '' ? {} : { kindPrefix: req.kindPrefix }),
        ...(req.limit === 0 ? {} : { limit: req.limit }),
        ...(req.pageToken === '' ? {} : { pageToken: req.pageToken }),
        order: listOrderFromWire(req.order),
        ...(req.includeSystem ? { includeSystem: true } : {}),
      });
      return { jobs: page.jobs.map(toWire), nextPageToken: page.nextPageToken ?? '' };
    }),

    counts: handle('counts', 'read', async (req, { principal }) => {
      const rows = await queue.counts(resolveScope(principal, scopeFromWire(req.scope), true));
      return {
        rows: rows.map((r) => ({ state: stateToWire(r.state), kind: r.kind, count: BigInt(r.count) })),
      };
    }),

    retry: handle('retry', 'retry', async (req, { principal }) => {
      const job = await queue.retry(req.jobId, resolveScope(principal, null, true));
      logger.info({ jobId: job.jobId, kind: job.kind, tenant: job.tenant, operator: principal.name }, 'operator retry');
      return { job: toWire(job) };
    }),

    cancel: handle('cancel', 'cancel', async (req, { principal }) => {
      const job = await queue.cancel(
        req.jobId,
        { by: principalLabel(principal), ...(req.reason === undefined ? {} : { reason: req.reason }) },
        resolveScope(principal, null, true),
      );
      logger.info({ jobId: job.jobId, kind: job.kind, tenant: job.tenant, caller: principal.name }, 'cancelled');
      return { job: toWire(job) };
    }),

    // Giving up on a Dead job is stopping it from outside, as a cancel is: the same callers.
    discard: handle('discard', 'cancel', async (req, { principal }) => {
      const job = await queue.discard(
        req.jobId,
        { by: principalLabel(principal), ...(req.reason === undefined ? {} : { reason: req.reason }) },
        resolveScope(principal, null, true),
      );
      logger.info({ jobId: job.jobId, kind: job.kind, tenant: job.tenant, caller: principal.name }, 'discarded');
      return { job: toWire(job) };
    }),

    // Running a job sooner is what its producer could have asked at enqueue: the same callers.
    runNow: handle('runNow', 'enqueue', async (req, { principal }) => {
      const job = await queue.runNow(req.jobId, { by: principalLabel(principal) }, resolveScope(principal, null, true));
      logger.info({ jobId: job.jobId, kind: job.kind, tenant: job.tenant, caller: principal.name }, 'run now');
      return { job: toWire(job) };
    }),

    cancelMatching: handle('cancelMatching', 'cancel', async (req, { principal }) => {
      const scope = resolveScope(principal, scopeFromWire(req.scope), true);
      const state = stateFilterFromWire(req.state, 'state');
      const cancelled = await queue.cancelMatching({
        scope,
        by: principalLabel(principal),
        ...(state === null ? {} : { states: [state] }),
        ...(req.kindPrefix === '' ? {} : { kindPrefix: req.kindPrefix }),
      });
      logger.info({ kindPrefix: req.kindPrefix, caller: principal.name, cancelled }, 'cancelled matching jobs');
      return { cancelled: BigInt(cancelled) };
    }),

    // A schedule lives in one scope: a tenant's own, or the one an operator names.
    createSchedule: handle('createSchedule', 'schedule', async (req, { principal }) => {
      const scope = writeScope(resolveScope(principal, scopeFromWire(req.schedule?.scope), false));
      return { schedule: scheduleToWire(await queue.createSchedule(newScheduleFromWire(req.schedule), scope)) };
    }),

    updateSchedule: handle('updateSchedule', 'schedule', async (req, { principal }) => {
      const scope = writeScope(resolveScope(principal, scopeFromWire(req.scope), false));
      return {
        schedule: scheduleToWire(await queue.updateSchedule(req.name, scheduleChangesFromWire(req), scope)),
      };
    }),

    getSchedule: handle('getSchedule', 'schedule', async (req, { principal }) => {
      const scope = writeScope(resolveScope(principal, scopeFromWire(req.scope), false));
      return { schedule: scheduleToWire(await queue.getSchedule(req.name, scope)) };
    }),

    listSchedules: handle('listSchedules', 'schedule', async (req, { principal }) => {
      const page = await queue.listSchedules({
        scope: resolveScope(principal, scopeFromWire(req.scope), true),
        ...(req.limit === 0 ? {} : { limit: req.limit }),
        ...(req.pageToken === '' ? {} : { pageToken: req.pageToken }),
      });
      return { schedules: page.schedules.map(scheduleToWire), nextPageToken: page.nextPageToken ?? '' };
    }),

    deleteSchedule: handle('deleteSchedule', 'schedule', async (req, { principal }) => {
      await queue.deleteSchedule(req.name, writeScope(resolveScope(principal, scopeFromWire(req.scope), false)));
      return {};
    }),

    // A pause holds back a kind prefix in a tenant's own scope, or (operators) any scope or everywhere.
    pauseKinds: handle('pauseKinds', 'pause', async (req, { principal }) => {
      const scope = pauseScope(principal, scopeFromWire(req.scope), req.everywhere);
      const pause = await queue.pause({ kindPrefix: req.kindPrefix, scope, by: principalLabel(principal) });
      logger.info({ kindPrefix: pause.kindPrefix, caller: principal.name }, 'paused kinds');
      return { pause: pauseToWire(pause) };
    }),

    resumeKinds: handle('resumeKinds', 'pause', async (req, { principal }) => {
      const scope = pauseScope(principal, scopeFromWire(req.scope), req.everywhere);
      await queue.resume({ kindPrefix: req.kindPrefix, scope });
      logger.info({ kindPrefix: req.kindPrefix, caller: principal.name }, 'resumed kinds');
      return {};
    }),

    listPauses: handle('listPauses', 'pause', async (req, { principal }) => {
      const pauses = await queue.pauses(resolveScope(principal, scopeFromWire(req.scope), true));
      return { pauses: pauses.map(pauseToWire) };
    }),

    // Kind limits are global: operators only (permission `limit`).
    setKindLimit: handle('setKindLimit', 'limit', async (req, { principal }) => {
      const limit = await queue.setKindLimit({
        kindPrefix: req.kindPrefix,
        concurrency: req.concurrency ?? null,
        rate: req.rate ?? null,
        by: principalLabel(principal),
      });
      logger.info({ kindPrefix: limit.kindPrefix, caller: principal.name }, 'set kind limit');
      return { limit: kindLimitToWire(limit) };
    }),

    clearKindLimit: handle('clearKindLimit', 'limit', async (req, { principal }) => {
      await queue.clearKindLimit(req.kindPrefix);
      logger.info({ kindPrefix: req.kindPrefix, caller: principal.name }, 'cleared kind limit');
      return {};
    }),

    listKindLimits: handle('listKindLimits', 'limit', async () => {
      const limits = await queue.kindLimits();
      return { limits: limits.map(kindLimitToWire) };
    }),
  };

  return {
    unary,
    openWork: (stream) =>
      openWorkSession(stream, {
        queue,
        auth,
        logger,
        maxLeaseWaitMs: config.max_lease_wait_ms,
        shutdown: deps.shutdown,
        admit: () => parkedCalls.admit(),
        toWire,
        completeEach,
        failEach,
        releaseEach,
        heartbeatEach: (items, scope) => extendEach(items, (req) => heartbeatOf(req, scope)),
        checkpointEach: (items, scope) => extendEach(items, (req) => checkpointOf(req, scope)),
      }),
    openProduce: (stream) =>
      openProduceSession(stream, {
        auth,
        logger,
        shutdown: deps.shutdown,
        // Held open while idle, like a Work stream: refused over the parked budget, the SDK sends
        // its enqueues as unary calls (the producers' own budget) instead.
        admit: () => parkedCalls.admit(),
        run: produce,
        errorOutcome,
      }),
    watch: (request, stream) =>
      runWatch(request, stream, {
        queue,
        feed: queue.feed,
        auth,
        logger,
        shutdown: deps.shutdown,
        admit: () => parkedCalls.admit(),
        admitOwn: (principal) => watchStreams.admit(principal),
        toWire,
      }),
  };
}

/** Calls of one kind held at once, up to a configured limit. */
class CallBudget {
  private held = 0;

  constructor(
    private readonly limit: number,
    private readonly what: string,
    private readonly key: string,
  ) {}

  /** Calls admitted and not yet released. */
  get open(): number {
    return this.held;
  }

  /** Count one more call; RESOURCE_EXHAUSTED, naming the budget's key, over the limit. Returns its release. */
  admit(): () => void {
    if (this.held >= this.limit) {
      throw new TelhaError(ErrorCode.ResourceExhausted, `over ${this.limit} ${this.what} (${this.key}); retry later`);
    }
    this.held++;
    let released = false;
    return () => {
      if (!released) this.held--;
      released = true;
    };
  }
}

/** A `CallBudget` for each principal (each token), made at its first call and dropped after its last. */
class BudgetPerPrincipal {
  private readonly budgets = new Map<Principal, CallBudget>();

  constructor(
    private readonly limit: number,
    private readonly what: string,
    private readonly key: string,
  ) {}

  /** Count one more call of `principal`'s; RESOURCE_EXHAUSTED, naming it and the key, over the limit. Returns its release. */
  admit(principal: Principal): () => void {
    let budget = this.budgets.get(principal);
    if (budget === undefined) {
      budget = new CallBudget(this.limit, `${this.what} for ${principalLabel(principal)}`, this.key);
      this.budgets.set(principal, budget);
    }
    const own = budget;
    const release = own.admit();
    return () => {
      release();
      if (own.open === 0 && this.budgets.get(principal) === own) this.budgets.delete(principal);
    };
  }
}

function optional<K extends string, V>(key: K, value: V | null): { [P in K]?: V } {
  return (value === null ? {} : { [key]: value }) as { [P in K]?: V };
}
