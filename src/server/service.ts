/**
 * The QueueService handlers: authenticate, authorize, translate, call the engine, translate back.
 * No queue logic lives here. Each role's handlers are a table of their own in `handlers/`; this
 * file gives them the one `handle` wrapper and the budgets, and opens the streams.
 */
import type { ServerConfig } from '../core/config.ts';
import { effectiveMaxAttempts } from '../core/transitions.ts';
import type { Logger } from '../core/logger.ts';
import type { EnqueueResult, JobRecord } from '../core/types.ts';
import type { Queue } from '../engine/queue.ts';
import { create } from '@bufbuild/protobuf';
import { ItemOutcomeSchema, type ItemOutcome, type WatchRequest } from '../gen/telha/v1/queue_pb.ts';
import { requirePermission, type Authenticator, type Principal } from '../edge/auth.ts';
import { enqueueResultToWire, jobToWire } from './convert.ts';
import { describeError, type WireStatus } from '../edge/status.ts';
import { BudgetPerPrincipal, CallBudget } from './budgets.ts';
import { backupHandlers } from './handlers/backup.ts';
import { controlHandlers } from './handlers/controls.ts';
import { jobHandlers } from './handlers/jobs.ts';
import type { Handle, HandlerKit, QueueServiceImpl } from './handlers/kit.ts';
import { produceHandlers } from './handlers/produce.ts';
import { scheduleHandlers } from './handlers/schedules.ts';
import { tenantHandlers } from './handlers/tenants.ts';
import { workHandlers } from './handlers/work.ts';
import { openProduceSession, type ProduceSession, type ProduceStream } from './produce-session.ts';
import { WatchMessages } from './watch-messages.ts';
import { runWatch, type WatchStream } from './watch.ts';
import { openWorkSession, type WorkSession, type WorkStream } from './work-session.ts';

export type { CallContext, QueueServiceImpl } from './handlers/kit.ts';

export interface ServiceDeps {
  readonly queue: Queue;
  readonly auth: Authenticator;
  readonly config: ServerConfig;
  readonly logger: Logger;
  /** Aborts parked lease calls when the server shuts down, so they return at once. */
  readonly shutdown: AbortSignal;
}

/** A handler failed: the status to send, already logged where it needed to be. */
export class CallFailed extends Error {
  constructor(readonly status: WireStatus) {
    super(status.message);
  }
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
  const handle: Handle =
    (method, permission, run, budgetOf = () => unaryCalls) =>
    async (req, ctx) => {
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

  const kit: HandlerKit = {
    queue,
    config,
    logger,
    shutdown: deps.shutdown,
    handle,
    unaryCalls,
    parkedCalls,
    toWire: (job: JobRecord) => jobToWire(job, maxAttempts(job)),
    resultToWire: (result: EnqueueResult) => enqueueResultToWire(result, maxAttempts(result.job)),
    errorOutcome: (error: unknown, item: string): ItemOutcome => {
      const status = describeError(error, logger, { item });
      return create(ItemOutcomeSchema, {
        code: status.code,
        message: status.message,
        reason: status.reason ?? '',
        field: status.field ?? '',
      });
    },
  };
  // Each log entry's Watch event is encoded once for every watcher that reads it.
  const watchMessages = new WatchMessages(kit.toWire);
  const produce = produceHandlers(kit);
  const work = workHandlers(kit);
  const unary: QueueServiceImpl = {
    ...produce.unary,
    ...work.unary,
    ...jobHandlers(kit),
    ...scheduleHandlers(kit),
    ...controlHandlers(kit),
    ...tenantHandlers(kit),
    ...backupHandlers(kit),
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
        toWire: kit.toWire,
        ...work.settlements,
      }),
    openProduce: (stream) =>
      openProduceSession(stream, {
        auth,
        logger,
        shutdown: deps.shutdown,
        // Held open while idle, like a Work stream: refused over the parked budget, the SDK sends
        // its enqueues as unary calls (the producers' own budget) instead.
        admit: () => parkedCalls.admit(),
        run: produce.produce,
        errorOutcome: kit.errorOutcome,
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
        messages: watchMessages,
      }),
  };
}
