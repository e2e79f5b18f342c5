/**
 * pg-boss on PostgreSQL, at its defaults and tuned: release 12 on a Node that
 * runs it (22.12 or later), else 10.4 (see releases.ts). The two differ in
 * how a setting is asked for, which the two bindings at the end of this file
 * hide; the measurements are the same.
 *
 * A pg-boss worker is a polling loop: it fetches `batchSize` jobs (default
 * 1), runs the handler, completes the batch without the handler waiting for
 * it, and then sleeps out the rest of `pollingIntervalSeconds` (default 2 s)
 * *even when it found work*. So:
 *  - defaults: N concurrent handlers = N such loops (10: N `work()` calls,
 *    it has no concurrency option; 12: one `work()` with `localConcurrency` N);
 *  - tuned: one loop fetching batches of N whose handler runs the batch's
 *    jobs concurrently, `pollingIntervalSeconds` 0.5 (the documented
 *    minimum), and `notifyWorker(id)` after a full batch, the documented way
 *    to skip the polling interval, so a backlog is fetched back to back (12's
 *    `burstWhenBatchFull` would do the same except at batchSize 1, i.e. c=1).
 *    On 12 also LISTEN/NOTIFY (`useListenNotify` and the queue's `notify`),
 *    so a new job wakes an idle worker; 10 has none.
 *
 * Completion: pg-boss emits no event when a job is completed, so the clock
 * stops when its job table shows none of the handled jobs still `active`.
 */
import type PgBoss10 from 'pg-boss';
import pg from 'pg';
import { sleep } from '../support.ts';
import { pgCommitSetting } from './environment.ts';
import { newestRunnable } from './releases.ts';
import { dropSchema, PG_URL, withPg } from './services.ts';
import {
  CompletionCounter,
  NO_PREFETCH_OF_ITS_OWN,
  handledThenSettled,
  type JobHandler,
  type OpenOptions,
  type RecoverySettings,
  type RunningWorkers,
  type System,
  type SystemFactory,
  type Tier,
} from './types.ts';

export const PGBOSS_SCHEMA = 'pgboss_bench';
const QUEUE = 'bench';
/** Rows per INSERT ... SELECT generate_series when loading retained completed jobs. */
const FILL_CHUNK = 100_000;
const TUNED_POLLING_SECONDS = 0.5;
const TUNED_SETTINGS = `pollingIntervalSeconds ${TUNED_POLLING_SECONDS} (default 2, documented minimum 0.5); one work() with batchSize = concurrency, the batch's jobs run concurrently; notifyWorker(id) after a full batch`;

interface Data {
  readonly t: string;
}

/** How the workers fetch: `loops` polling loops, each fetching up to `batchSize` jobs at a time. */
interface Fetching {
  readonly loops: number;
  readonly batchSize: number;
  /** Absent: the release's default. */
  readonly pollingIntervalSeconds?: number;
}

/** A started pg-boss, in the few operations the benchmark needs. */
interface Boss {
  createQueue(): Promise<void>;
  insert(tags: readonly string[], startAfter: Date | undefined): Promise<void>;
  send(tag: string): Promise<void>;
  /** Start the workers; `handle` runs one fetched batch. Resolves to the (first) worker's id. */
  work(fetching: Fetching, handle: (tags: readonly string[]) => Promise<void>): Promise<string>;
  /** Skip the rest of this worker's polling interval. */
  notifyWorker(id: string): void;
  /** Stop fetching; resolves once no worker loop still holds a pool connection. */
  offWork(): Promise<void>;
  stop(): Promise<void>;
  query(sql: string, values: unknown[]): Promise<{ rows: unknown[] }>;
}

interface StartOptions {
  readonly url: string;
  readonly tuned: boolean;
  readonly recovery: RecoverySettings | undefined;
  readonly onError: (error: Error) => void;
}

/** One pg-boss release: how to start it, and what its settings are called there. */
interface Binding {
  start(options: StartOptions): Promise<Boss>;
  /** The settings line of each configuration (the tier's commit setting is appended). */
  readonly settings: { readonly defaults: string; readonly tuned: string };
  /** How long the completed rows of workload 4 stay in its job table. */
  readonly retention: string;
}

class PgBossSystem implements System {
  readonly id: string;
  readonly label: string;
  readonly isTelha = false;
  readonly settings: string[];
  readonly notApplicable = { noPrefetch: NO_PREFETCH_OF_ITS_OWN };
  readonly fillMethod: string;
  private boss: Boss | null = null;

  constructor(
    private readonly tuned: boolean,
    private readonly tier: Tier,
  ) {
    this.id = tuned ? 'pg-boss-tuned' : 'pg-boss';
    this.label = tuned ? 'pg-boss tuned' : 'pg-boss';
    const settings = PG_BOSS.use.settings;
    this.settings = [`${tuned ? settings.tuned : settings.defaults}; ${pgCommitSetting(tier)}`];
    this.fillMethod = `direct SQL: INSERT ... SELECT generate_series into its job table with state 'completed' (pg-boss documents raw INSERT/COPY into that table); ${PG_BOSS.use.retention}`;
  }

  private get started(): Boss {
    if (this.boss === null) throw new Error(`${this.id}: not open`);
    return this.boss;
  }

  private async startBoss(options: OpenOptions): Promise<Boss> {
    this.boss = await PG_BOSS.use.start({
      url: this.tier.pgUrl,
      tuned: this.tuned,
      recovery: options.recovery,
      onError: (error) => console.error(`${this.id}: ${error.message}`),
    });
    return this.boss;
  }

  async open(options: OpenOptions = {}): Promise<void> {
    await dropSchema(PGBOSS_SCHEMA);
    await (await this.startBoss(options)).createQueue();
  }

  async close(): Promise<void> {
    await this.boss?.stop();
    this.boss = null;
    await dropSchema(PGBOSS_SCHEMA);
  }

  async enqueueBulk(tags: readonly string[], delayMs?: number): Promise<void> {
    await this.started.insert(tags, delayMs === undefined ? undefined : new Date(Date.now() + delayMs));
  }

  async enqueueOne(tag: string): Promise<void> {
    await this.started.send(tag);
  }

  async startWorkers(concurrency: number, handler: JobHandler): Promise<RunningWorkers> {
    const boss = this.started;
    const handled = new CompletionCounter();
    const runBatch = async (tags: readonly string[]): Promise<void> => {
      await Promise.all(
        tags.map(async (tag) => {
          await handler(tag);
          handled.add();
        }),
      );
    };
    if (this.tuned) {
      // The handler can only run after work() resolved, but read the id through a holder all the same.
      const worker: { id?: string } = {};
      const fetching = { loops: 1, batchSize: concurrency, pollingIntervalSeconds: TUNED_POLLING_SECONDS };
      worker.id = await boss.work(fetching, async (tags) => {
        await runBatch(tags);
        // A full batch means more is probably waiting: fetch again without sleeping out the interval.
        if (tags.length === concurrency && worker.id !== undefined) boss.notifyWorker(worker.id);
      });
    } else {
      await boss.work({ loops: concurrency, batchSize: 1 }, runBatch);
    }
    return {
      waitCompleted: (n, deadline) => handledThenSettled(handled, n, deadline, () => this.activeJobs()),
      close: () => boss.offWork(),
    };
  }

  private async activeJobs(): Promise<number> {
    const { rows } = await this.started.query(
      `SELECT count(*)::int AS n FROM ${pg.escapeIdentifier(PGBOSS_SCHEMA)}.job WHERE name = $1 AND state = 'active'`,
      [QUEUE],
    );
    return Number((rows[0] as { n: number } | undefined)?.n ?? 0);
  }

  async fillCompleted(n: number, progress: (done: number) => void): Promise<void> {
    await withPg(PG_URL, async (client) => {
      for (let done = 0; done < n;) {
        const size = Math.min(FILL_CHUNK, n - done);
        await client.query(
          `INSERT INTO ${pg.escapeIdentifier(PGBOSS_SCHEMA)}.job (name, data, state, started_on, completed_on, policy)
           SELECT $1, jsonb_build_object('t', 'retained-' || g), 'completed', now(), now(), 'standard'
           FROM generate_series(1, $2::int) AS g`,
          [QUEUE, size],
        );
        done += size;
        progress(done);
      }
      await client.query(`ANALYZE ${pg.escapeIdentifier(PGBOSS_SCHEMA)}.job`);
    });
  }

  attachInfo(): Record<string, string> {
    return {};
  }

  /** Start on the parent's schema without resetting it (the recovery child). */
  async attachTo(options: OpenOptions): Promise<void> {
    await this.startBoss(options);
  }
}

const tagsOf = (jobs: readonly { readonly data: Data }[]): string[] => jobs.map((job) => job.data.t);

/** pg-boss 10.4, for Node 20. It has no LISTEN/NOTIFY and no concurrency option: N loops are N work() calls. */
const pgBoss10: Binding = {
  settings: {
    defaults: 'defaults (pollingIntervalSeconds 2, batchSize 1, pool max 10): concurrency N = N work() loops',
    tuned: TUNED_SETTINGS,
  },
  retention: 'completed jobs stay there until archived after 12 h (archiveCompletedAfterSeconds default)',
  async start({ url, recovery, onError }) {
    const { default: PgBoss } = await import('pg-boss');
    const boss: PgBoss10 = new PgBoss({
      connectionString: url,
      schema: PGBOSS_SCHEMA,
      ...(recovery
        ? { expireInSeconds: recovery.leaseSeconds, maintenanceIntervalSeconds: recovery.checkSeconds }
        : {}),
    });
    boss.on('error', onError);
    await boss.start();
    return {
      createQueue: () => boss.createQueue(QUEUE),
      insert: (tags, startAfter) =>
        boss.insert(
          tags.map((t) => ({
            name: QUEUE,
            data: { t },
            ...(startAfter ? { startAfter: startAfter.toISOString() } : {}),
          })),
        ),
      send: async (tag) => {
        await boss.send(QUEUE, { t: tag });
      },
      work: async ({ loops, ...options }, handle) => {
        const ids: string[] = [];
        for (let i = 0; i < loops; i++) ids.push(await boss.work<Data>(QUEUE, options, (jobs) => handle(tagsOf(jobs))));
        return ids[0] ?? '';
      },
      notifyWorker: (id) => boss.notifyWorker(id),
      offWork: async () => {
        await boss.offWork(QUEUE);
        // offWork only flags the loops; one still queued for a pool connection (N loops share 10) must
        // finish its fetch before close() ends the pool, or it waits forever and keeps the process alive.
        await sleep(500);
      },
      stop: () => boss.stop({ graceful: false, close: true }),
      query: (sql, values) => boss.getDb().executeSql(sql, values),
    };
  },
};

/** pg-boss 12, for Node 22.12 and later. */
const pgBoss12: Binding = {
  settings: {
    defaults:
      'defaults (pollingIntervalSeconds 2, batchSize 1, pool max 10, no LISTEN/NOTIFY): concurrency N = one work() with localConcurrency N',
    tuned: `${TUNED_SETTINGS}; useListenNotify and the queue's notify, so a new job wakes an idle worker, with notifyPollingIntervalSeconds ${TUNED_POLLING_SECONDS} (default 30: a job an expired lease puts back sends no NOTIFY)`,
  },
  retention: 'completed jobs stay there until deleted after 7 days (the queue default deleteAfterSeconds)',
  async start({ url, tuned, recovery, onError }) {
    const { PgBoss } = await import('pg-boss-12');
    const boss = new PgBoss({
      connectionString: url,
      schema: PGBOSS_SCHEMA,
      useListenNotify: tuned,
      // Expired jobs are failed (and retried) by the supervisor's monitor pass.
      ...(recovery
        ? { superviseIntervalSeconds: recovery.checkSeconds, monitorIntervalSeconds: recovery.checkSeconds }
        : {}),
    });
    boss.on('error', onError);
    await boss.start();
    return {
      // Since pg-boss 11 a job's expiry is a queue option, no longer the constructor's.
      createQueue: () =>
        boss.createQueue(QUEUE, { notify: tuned, ...(recovery ? { expireInSeconds: recovery.leaseSeconds } : {}) }),
      insert: async (tags, startAfter) => {
        await boss.insert(
          QUEUE,
          tags.map((t) => ({ data: { t }, ...(startAfter ? { startAfter } : {}) })),
        );
      },
      send: async (tag) => {
        await boss.send(QUEUE, { t: tag });
      },
      work: ({ loops, pollingIntervalSeconds, batchSize }, handle) =>
        boss.work<Data>(
          QUEUE,
          {
            localConcurrency: loops,
            batchSize,
            // While NOTIFY is on, polling keeps the given interval instead of relaxing to 30 s.
            ...(pollingIntervalSeconds === undefined
              ? {}
              : { pollingIntervalSeconds, notifyPollingIntervalSeconds: pollingIntervalSeconds }),
          },
          (jobs) => handle(tagsOf(jobs)),
        ),
      notifyWorker: (id) => boss.notifyWorker(id),
      // Waits for the loops to stop (offWork's default since pg-boss 11).
      offWork: () => boss.offWork(QUEUE),
      stop: () => boss.stop({ graceful: false, close: true }),
      query: (sql, values) => boss.getDb().executeSql(sql, values),
    };
  },
};

/** The release this run uses: the newest whose engines admit this Node. */
export const PG_BOSS = newestRunnable([
  { installedAs: 'pg-boss-12', use: pgBoss12 },
  { installedAs: 'pg-boss', use: pgBoss10 },
]);

function factory(tuned: boolean): SystemFactory {
  return {
    create: (tier) => new PgBossSystem(tuned, tier),
    attach: async (tier, _env, _info, options) => {
      const system = new PgBossSystem(tuned, tier);
      await system.attachTo(options);
      return system;
    },
  };
}

export const pgBossDefaults = factory(false);
export const pgBossTuned = factory(true);
