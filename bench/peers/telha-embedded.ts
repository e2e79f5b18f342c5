/**
 * Telha as a library in the benchmark's own process: `openQueue` on a fresh
 * RocksDB directory, worked by `LocalWorker` (the SDK's worker loop, leasing
 * from and completing to the queue directly). No network hop at all, so this
 * row is the engine's ceiling rather than a like-for-like peer of a
 * client/server queue.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { loadConfig, LocalWorker, openQueue, type Queue } from 'telha';
import { KIND, recoveryJobsConfig, SCOPE, telhaJob } from './telha-common.ts';
import { settlesWithin } from '../support.ts';
import { loadRocksRetained } from './telha-fill.ts';
import {
  CompletionCounter,
  type Environment,
  type JobHandler,
  type OpenOptions,
  type RunningWorkers,
  type WorkerOptions,
  type System,
  type SystemFactory,
  type Tier,
} from './types.ts';

class TelhaEmbedded implements System {
  readonly id = 'telha-embedded';
  readonly label = 'Telha embedded (rocksdb)';
  readonly isTelha = true;
  readonly settings: string[];
  readonly notApplicable = {};
  readonly fillMethod =
    'public API in-process (enqueueBatch 10k, leaseBatch 1k, complete) into a template store built once per run, copied in (the first Telha rocksdb system pays the build)';
  private queue: Queue | null = null;
  private dir: string | null = null;
  private options: OpenOptions = {};
  /** False in the recovery child, which uses the parent's store and must not delete it. */
  private readonly owned: boolean;

  constructor(
    private readonly tier: Tier,
    private readonly env: Environment,
    attachedDir?: string,
  ) {
    this.dir = attachedDir ?? null;
    this.owned = attachedDir === undefined;
    this.settings = [
      `storage.durability = ${this.durability}${tier.id === 'process' ? ' (the default)' : ''}, services (reaper, maintenance) on`,
    ];
  }

  private get durability(): 'process' | 'fsync' {
    return this.tier.id === 'fsync' ? 'fsync' : 'process';
  }

  private async openStore(): Promise<Queue> {
    if (this.dir === null) throw new Error('telha-embedded: no store directory');
    // The package's own loader, as a user calls it; `env: {}` keeps this shell's TELHA_* variables out.
    const config = await loadConfig({
      env: {},
      overrides: { storage: { path: this.dir, durability: this.durability }, jobs: recoveryJobsConfig(this.options) },
    });
    return openQueue({ config });
  }

  private get open_(): Queue {
    if (this.queue === null) throw new Error('telha-embedded: not open');
    return this.queue;
  }

  async open(options: OpenOptions = {}): Promise<void> {
    this.options = options;
    this.dir = await mkdtemp(join(this.env.tmpRoot, 'telha-embedded-'));
    this.queue = await this.openStore();
  }

  /** Open an existing store (the recovery child). */
  async attachTo(options: OpenOptions): Promise<void> {
    this.options = options;
    this.queue = await this.openStore();
  }

  async close(): Promise<void> {
    await this.queue?.close();
    this.queue = null;
    if (this.owned && this.dir !== null) await rm(this.dir, { recursive: true, force: true });
    this.dir = null;
  }

  async enqueueBulk(tags: readonly string[], delayMs?: number): Promise<void> {
    await this.open_.enqueueBatch(
      tags.map((tag) => telhaJob(tag, delayMs)),
      SCOPE,
    );
  }

  async enqueueOne(tag: string): Promise<void> {
    await this.open_.enqueue(telhaJob(tag), SCOPE);
  }

  /**
   * Telha's own in-process worker, `LocalWorker` (the SDK Worker's loop on the
   * queue directly), at its defaults apart from concurrency: leases pushed as
   * slots free up, prefetch 'auto', results settled as handlers finish.
   */
  startWorkers(concurrency: number, handler: JobHandler, options: WorkerOptions = {}): Promise<RunningWorkers> {
    const completed = new CompletionCounter();
    const worker = new LocalWorker(this.open_, {
      workerId: 'bench-worker',
      scope: SCOPE,
      kinds: [KIND],
      concurrency,
      ...(options.prefetch === false ? { prefetch: 0 } : {}),
      handler: (job) => handler(Buffer.from(job.payload).toString()),
      onCompleted: () => completed.add(),
    }).start();
    return Promise.resolve({
      waitCompleted: (n, deadline) => completed.wait(n, deadline),
      // A handler that never returns (the recovery child) is simply left behind.
      close: async () => void (await settlesWithin(worker.close(1_000), 2_000)),
    });
  }

  async fillCompleted(n: number, progress: (done: number) => void): Promise<void> {
    if (this.dir === null) throw new Error('telha-embedded: not open');
    await this.queue?.close();
    this.queue = null;
    await loadRocksRetained(this.env.tmpRoot, this.dir, n, progress);
    this.queue = await this.openStore();
  }

  attachInfo(): Record<string, string> {
    return { dir: this.dir ?? '' };
  }

  /** RocksDB takes a lock on its directory: the recovery child can open it only while this process has it closed. */
  readonly handOver = {
    release: async (): Promise<void> => {
      await this.queue?.close();
      this.queue = null;
    },
    reacquire: async (): Promise<void> => {
      this.queue = await this.openStore();
    },
  };
}

export const telhaEmbedded: SystemFactory = {
  create: (tier, env) => new TelhaEmbedded(tier, env),
  attach: async (tier, env, info, options) => {
    const system = new TelhaEmbedded(tier, env, info['dir']);
    await system.attachTo(options);
    return system;
  },
};
