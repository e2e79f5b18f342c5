/**
 * pg-boss on PostgreSQL, at its defaults and tuned.
 *
 * pg-boss 10 has no per-worker concurrency option: each `work()` call is one
 * polling loop that fetches `batchSize` jobs (default 1), runs the handler,
 * completes the batch without awaiting it, and then sleeps out the rest of
 * `pollingIntervalSeconds` (default 2 s) *even when it found work*. So:
 *  - defaults: N concurrent handlers = N `work()` calls with default options;
 *  - tuned: one `work()` with `batchSize` = N whose handler runs the batch's
 *    jobs concurrently, `pollingIntervalSeconds` 0.5 (the documented minimum),
 *    and `notifyWorker(id)` after a full batch, the documented way to skip the
 *    polling interval, so a backlog is fetched back to back.
 *
 * Completion: pg-boss sends the completion after the handler resolves without
 * waiting for it and emits no event, so the clock stops when its job table
 * shows none of the handled jobs still `active`.
 */
import PgBoss from 'pg-boss';
import pg from 'pg';
import { dropSchema, PG_URL, withPg } from './services.ts';
import {
  CompletionCounter,
  handledThenSettled,
  type JobHandler,
  type OpenOptions,
  type RunningWorkers,
  type System,
  type SystemFactory,
  type Tier,
} from './types.ts';
import { pgCommitSetting } from './environment.ts';

export const PGBOSS_SCHEMA = 'pgboss_bench';
const QUEUE = 'bench';
/** Rows per INSERT ... SELECT generate_series when loading retained completed jobs. */
const FILL_CHUNK = 100_000;
const TUNED_POLLING_SECONDS = 0.5;
/** How long stopped work() loops get to finish the fetch they are in (see close()). */
const STOP_GRACE_MS = 500;

interface Data {
  readonly t: string;
}

class PgBossSystem implements System {
  readonly id: string;
  readonly label: string;
  readonly isTelha = false;
  readonly settings: string[];
  readonly notApplicable = {};
  readonly fillMethod =
    "direct SQL: INSERT ... SELECT generate_series into its job table with state 'completed' (pg-boss documents raw INSERT/COPY into that table); completed jobs stay there until archived after 12 h (archiveCompletedAfterSeconds default)";
  private boss: PgBoss | null = null;
  private options: OpenOptions = {};

  constructor(
    private readonly tuned: boolean,
    private readonly tier: Tier,
  ) {
    this.id = tuned ? 'pg-boss-tuned' : 'pg-boss';
    this.label = tuned ? 'pg-boss tuned' : 'pg-boss';
    const commit = pgCommitSetting(tier);
    this.settings = tuned
      ? [
          `pollingIntervalSeconds ${TUNED_POLLING_SECONDS} (default 2, documented minimum 0.5); one work() with batchSize = concurrency, the batch's jobs run concurrently; notifyWorker(id) after a full batch; ${commit}`,
        ]
      : [`defaults (pollingIntervalSeconds 2, batchSize 1, pool max 10): concurrency N = N work() loops; ${commit}`];
  }

  private get started(): PgBoss {
    if (this.boss === null) throw new Error(`${this.id}: not open`);
    return this.boss;
  }

  private async startBoss(options: OpenOptions): Promise<void> {
    this.options = options;
    const recovery = options.recovery;
    const boss = new PgBoss({
      connectionString: this.tier.pgUrl,
      schema: PGBOSS_SCHEMA,
      ...(recovery
        ? { expireInSeconds: recovery.leaseSeconds, maintenanceIntervalSeconds: recovery.checkSeconds }
        : {}),
    });
    boss.on('error', (error) => console.error(`${this.id}: ${error.message}`));
    await boss.start();
    this.boss = boss;
  }

  async open(options: OpenOptions = {}): Promise<void> {
    await dropSchema(PGBOSS_SCHEMA);
    await this.startBoss(options);
    await this.started.createQueue(QUEUE);
  }

  async close(): Promise<void> {
    await this.boss?.stop({ graceful: false, close: true });
    this.boss = null;
    await dropSchema(PGBOSS_SCHEMA);
  }

  async enqueueBulk(tags: readonly string[], delayMs?: number): Promise<void> {
    const startAfter = delayMs === undefined ? undefined : new Date(Date.now() + delayMs).toISOString();
    await this.started.insert(
      tags.map((t) => ({ name: QUEUE, data: { t }, ...(startAfter === undefined ? {} : { startAfter }) })),
    );
  }

  async enqueueOne(tag: string): Promise<void> {
    await this.started.send(QUEUE, { t: tag });
  }

  async startWorkers(concurrency: number, handler: JobHandler): Promise<RunningWorkers> {
    const boss = this.started;
    const handled = new CompletionCounter();
    const run = async (job: PgBoss.Job<Data>): Promise<void> => {
      await handler(job.data.t);
      handled.add();
    };
    if (this.tuned) {
      // The handler can only run after work() resolved, but read the id through a holder all the same.
      const worker: { id?: string } = {};
      worker.id = await boss.work<Data>(
        QUEUE,
        { batchSize: concurrency, pollingIntervalSeconds: TUNED_POLLING_SECONDS },
        async (jobs) => {
          await Promise.all(jobs.map(run));
          // A full batch means more is probably waiting: fetch again without sleeping out the interval.
          if (jobs.length === concurrency && worker.id !== undefined) boss.notifyWorker(worker.id);
        },
      );
    } else {
      for (let i = 0; i < concurrency; i++) {
        await boss.work<Data>(QUEUE, async ([job]) => {
          if (job) await run(job);
        });
      }
    }
    return {
      waitCompleted: (n, deadline) => handledThenSettled(handled, n, deadline, () => this.activeJobs()),
      close: async () => {
        await boss.offWork(QUEUE);
        // offWork only flags the loops; one still queued for a pool connection (N loops share 10) must
        // finish its fetch before close() ends the pool, or it waits forever and keeps the process alive.
        await new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS));
      },
    };
  }

  private async activeJobs(): Promise<number> {
    const { rows } = await this.started
      .getDb()
      .executeSql(
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
