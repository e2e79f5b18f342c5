/**
 * graphile-worker on PostgreSQL, at its defaults and tuned as its
 * performance docs suggest (https://worker.graphile.org/docs/performance):
 * release 0.18 on a Node that runs it (22.18 or later), else 0.17 (see
 * releases.ts), whose API is the same for everything used here.
 *
 * Producer: `makeWorkerUtils` (`addJobs` in bulk, `addJob` one at a time).
 * Consumer: `run({ concurrency: N, taskList })`. New jobs reach idle workers
 * through LISTEN/NOTIFY; `pollInterval` only matters for future-dated jobs.
 *
 * graphile-worker deletes a job when it completes, and completes it after
 * the task resolves without waiting for the write or emitting an event after
 * it, so the clock stops when its jobs table holds none of them locked.
 * Nothing is retained, and a job whose worker died is retried only after a
 * fixed 4 h lock timeout: both workloads say n/a instead of running.
 */
import type * as Graphile18 from 'graphile-worker-18';
import type { Runner, WorkerUtils } from 'graphile-worker-18';
import pg from 'pg';
import { newestRunnable } from './releases.ts';
import { dropSchema, withPg } from './services.ts';
import {
  CompletionCounter,
  NO_PREFETCH_OF_ITS_OWN,
  handledThenSettled,
  type JobHandler,
  type RunningWorkers,
  type System,
  type SystemFactory,
  type Tier,
} from './types.ts';
import { pgCommitSetting } from './environment.ts';

export const GRAPHILE_SCHEMA = 'graphile_bench';
const TASK = 'bench';

interface Payload {
  readonly t: string;
}

type Graphile = typeof Graphile18;

/** The release this run uses: the newest whose engines admit this Node. */
export const GRAPHILE_WORKER = newestRunnable([
  { installedAs: 'graphile-worker-18', use: (): Promise<Graphile> => import('graphile-worker-18') },
  {
    installedAs: 'graphile-worker',
    // 0.17's declarations differ from 0.18's only nominally (private fields, a unique symbol) for the calls made here.
    use: async (): Promise<Graphile> => (await import('graphile-worker')) as unknown as Graphile,
  },
]);
const { Logger, makeWorkerUtils, run } = await GRAPHILE_WORKER.use();

/** Warnings and errors only: the default logger prints a line per completed job, which would be the benchmark. */
const quietLogger = new Logger(() => (level, message) => {
  // LogLevel is an ambient const enum (not importable here); its values are these strings.
  if (['error', 'warning'].includes(String(level))) console.error(`graphile-worker ${level}: ${message}`);
});

/** Tuned pool size: the docs' "10 or concurrentJobs + 2, whichever is larger", capped below the server's max_connections (100). */
function tunedPoolSize(concurrency: number): number {
  return Math.min(Math.max(10, concurrency + 2), 50);
}

class GraphileWorker implements System {
  readonly id: string;
  readonly label: string;
  readonly isTelha = false;
  readonly settings: string[];
  readonly notApplicable = {
    // Tuned, its local queue holds one job beyond its concurrency: its own setting, kept.
    noPrefetch: `${NO_PREFETCH_OF_ITS_OWN} (tuned: its local queue holds one more)`,
    retainedCompleted: 'n/a: deletes jobs on completion',
    recovery: 'n/a (fixed 4 h lock)',
  };
  readonly fillMethod = 'n/a';
  private utils: WorkerUtils | null = null;

  constructor(
    private readonly tuned: boolean,
    private readonly tier: Tier,
  ) {
    this.id = tuned ? 'graphile-worker-tuned' : 'graphile-worker';
    this.label = tuned ? 'graphile-worker tuned' : 'graphile-worker';
    const commit = pgCommitSetting(tier);
    this.settings = tuned
      ? [
          `maxPoolSize max(10, N + 2) capped at 50 (default 10); localQueue.size N + 1 (default off); completeJobBatchDelay 0 (default off: one write per completion); ${commit}`,
        ]
      : [`defaults (maxPoolSize 10, no local queue, one completion write per job, pollInterval 2 s); ${commit}`];
  }

  private get producer(): WorkerUtils {
    if (this.utils === null) throw new Error(`${this.id}: not open`);
    return this.utils;
  }

  async open(): Promise<void> {
    await dropSchema(GRAPHILE_SCHEMA);
    this.utils = await makeWorkerUtils({
      connectionString: this.tier.pgUrl,
      schema: GRAPHILE_SCHEMA,
      logger: quietLogger,
    });
    await this.utils.migrate();
  }

  async close(): Promise<void> {
    await this.utils?.release();
    this.utils = null;
    await dropSchema(GRAPHILE_SCHEMA);
  }

  async enqueueBulk(tags: readonly string[], delayMs?: number): Promise<void> {
    const runAt = delayMs === undefined ? undefined : new Date(Date.now() + delayMs);
    await this.producer.addJobs(
      tags.map((t) => ({ identifier: TASK, payload: { t }, ...(runAt === undefined ? {} : { runAt }) })),
    );
  }

  async enqueueOne(tag: string): Promise<void> {
    await this.producer.addJob(TASK, { t: tag });
  }

  async startWorkers(concurrency: number, handler: JobHandler): Promise<RunningWorkers> {
    const handled = new CompletionCounter();
    const runner: Runner = await run({
      connectionString: this.tier.pgUrl,
      schema: GRAPHILE_SCHEMA,
      concurrency,
      noHandleSignals: true,
      logger: quietLogger,
      taskList: {
        [TASK]: async (payload) => {
          await handler((payload as Payload).t);
          handled.add();
        },
      },
      ...(this.tuned
        ? {
            maxPoolSize: tunedPoolSize(concurrency),
            preset: { worker: { localQueue: { size: concurrency + 1 }, completeJobBatchDelay: 0 } },
          }
        : {}),
    });
    return {
      waitCompleted: (n, deadline) => handledThenSettled(handled, n, deadline, () => this.lockedJobs()),
      close: () => runner.stop(),
    };
  }

  /** Jobs taken by a worker and not yet deleted (completed) or released. */
  private lockedJobs(): Promise<number> {
    return withPg(this.tier.pgUrl, async (client) => {
      const { rows } = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${pg.escapeIdentifier(GRAPHILE_SCHEMA)}._private_jobs WHERE locked_at IS NOT NULL`,
      );
      return rows[0]?.n ?? 0;
    });
  }

  fillCompleted(): Promise<void> {
    return Promise.reject(new Error(this.notApplicable.retainedCompleted));
  }

  attachInfo(): Record<string, string> {
    return {};
  }
}

function factory(tuned: boolean): SystemFactory {
  return {
    create: (tier) => new GraphileWorker(tuned, tier),
    attach: () => Promise.reject(new Error('graphile-worker: the recovery workload is n/a (fixed 4 h lock)')),
  };
}

export const graphileDefaults = factory(false);
export const graphileTuned = factory(true);
