/**
 * BullMQ on Redis, at its defaults: one `Queue` producing (`addBulk` / `add`),
 * one `Worker` with `concurrency` N consuming. Completion is BullMQ's own
 * worker `completed` event, emitted after the job was moved to the completed set.
 */
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { deleteKeys, redisClient } from './services.ts';
import {
  CompletionCounter,
  NO_PREFETCH_OF_ITS_OWN,
  type JobHandler,
  type OpenOptions,
  type RunningWorkers,
  type System,
  type SystemFactory,
  type Tier,
} from './types.ts';

/** BullMQ's key prefix for this benchmark (its default is `bull`); every key under it is deleted at start and end. */
export const BULLMQ_PREFIX = 'telha-bench-peers';
const QUEUE = 'bench';
/** Filler jobs for the retained-completed workload: this many added per addBulk call while a worker drains them. */
const FILL_CHUNK = 5_000;
const FILL_CONCURRENCY = 100;

interface Data {
  readonly t: string;
}

class BullMq implements System {
  readonly id = 'bullmq';
  readonly label = 'BullMQ';
  readonly isTelha = false;
  readonly settings: string[];
  readonly notApplicable = { noPrefetch: NO_PREFETCH_OF_ITS_OWN };
  readonly fillMethod =
    'addBulk + a BullMQ Worker (concurrency 100, no-op) processing them: completed jobs are kept by default (removeOnComplete unset)';
  private connection: Redis | null = null;
  private queue: Queue<Data> | null = null;
  private options: OpenOptions = {};

  constructor(tier: Tier) {
    this.settings = [
      `defaults (removeOnComplete unset: completed jobs kept; drainDelay 5 s); Redis appendonly ${tier.redis.appendonly}, appendfsync ${tier.redis.appendfsync}`,
    ];
  }

  private get producer(): Queue<Data> {
    if (this.queue === null) throw new Error('bullmq: not open');
    return this.queue;
  }

  async open(options: OpenOptions = {}): Promise<void> {
    this.options = options;
    this.connection = redisClient();
    await deleteKeys(this.connection, `${BULLMQ_PREFIX}:*`);
    this.queue = new Queue<Data>(QUEUE, { connection: this.connection, prefix: BULLMQ_PREFIX });
    await this.queue.waitUntilReady();
  }

  /** Connect to the parent's queue without touching its keys (the recovery child). */
  async attachTo(options: OpenOptions): Promise<void> {
    this.options = options;
    this.connection = redisClient();
    this.queue = new Queue<Data>(QUEUE, { connection: this.connection, prefix: BULLMQ_PREFIX });
    await this.queue.waitUntilReady();
  }

  async close(): Promise<void> {
    await this.queue?.close();
    this.queue = null;
    if (this.connection) {
      await deleteKeys(this.connection, `${BULLMQ_PREFIX}:*`);
      this.connection.disconnect();
    }
    this.connection = null;
  }

  async enqueueBulk(tags: readonly string[], delayMs?: number): Promise<void> {
    await this.producer.addBulk(
      tags.map((t) => ({ name: QUEUE, data: { t }, ...(delayMs === undefined ? {} : { opts: { delay: delayMs } }) })),
    );
  }

  async enqueueOne(tag: string): Promise<void> {
    await this.producer.add(QUEUE, { t: tag });
  }

  async startWorkers(concurrency: number, handler: JobHandler): Promise<RunningWorkers> {
    const completed = new CompletionCounter();
    const recovery = this.options.recovery;
    // Workers block on their own connection; BullMQ duplicates the one it is given.
    const connection = redisClient();
    const worker = new Worker<Data>(QUEUE, (job: Job<Data>) => handler(job.data.t), {
      connection,
      prefix: BULLMQ_PREFIX,
      concurrency,
      ...(recovery
        ? { lockDuration: recovery.leaseSeconds * 1_000, stalledInterval: recovery.checkSeconds * 1_000 }
        : {}),
    });
    worker.on('completed', () => completed.add());
    worker.on('failed', (job, error) => console.error(`bullmq: job ${job?.id ?? '?'} failed: ${error.message}`));
    worker.on('error', (error) => console.error(`bullmq worker error: ${error.message}`));
    await worker.waitUntilReady();
    return {
      waitCompleted: (n, deadline) => completed.wait(n, deadline),
      close: async () => {
        // force: do not wait for a handler that never returns (the recovery child's job).
        await worker.close(true);
        connection.disconnect();
      },
    };
  }

  async fillCompleted(n: number, progress: (done: number) => void): Promise<void> {
    const workers = await this.startWorkers(FILL_CONCURRENCY, () => Promise.resolve());
    try {
      for (let added = 0; added < n;) {
        const size = Math.min(FILL_CHUNK, n - added);
        await this.producer.addBulk(
          Array.from({ length: size }, () => ({ name: 'retained', data: { t: 'retained' } })),
        );
        added += size;
        // Keep at most two chunks outstanding so Redis memory and the wait list stay bounded.
        const seen = await workers.waitCompleted(Math.max(0, added - 2 * FILL_CHUNK), Infinity);
        progress(seen);
      }
      progress(await workers.waitCompleted(n, Infinity));
    } finally {
      await workers.close();
    }
  }

  attachInfo(): Record<string, string> {
    return {};
  }
}

export const bullmq: SystemFactory = {
  create: (tier) => new BullMq(tier),
  attach: async (tier, _env, _info, options) => {
    const system = new BullMq(tier);
    await system.attachTo(options);
    return system;
  },
};
