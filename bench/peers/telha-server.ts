/**
 * Telha through its server: `telha serve` as a child process (exactly as
 * bench/server.ts starts it) on RocksDB in a temp dir or on PostgreSQL, the
 * SDK `TelhaClient` producing and the SDK `Worker` consuming over loopback gRPC.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { JobState, TelhaClient, tenantScope, Worker } from 'telha/client';
import { count, settlesWithin, startServer, type RunningServer } from '../support.ts';
import { dropSchema } from './services.ts';
import { KIND, recoveryJobsConfig, RETAINED_KIND, SCOPE } from './telha-common.ts';
import { loadPostgresRetained, loadRocksRetained } from './telha-fill.ts';
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

/** The schema the PostgreSQL backend uses in the peers' database (dropped and recreated per run). */
export const TELHA_PG_SCHEMA = 'telha_bench';

type Backend = 'rocksdb' | 'postgres';

/** The kind of the jobs that warm a fresh server process up. */
const WARM_UP_KIND = 'warm-up';

class TelhaServer implements System {
  readonly id: string;
  readonly label: string;
  readonly isTelha = true;
  readonly settings: string[];
  readonly notApplicable = {};
  readonly fillMethod: string;
  private server: RunningServer | null = null;
  private client: TelhaClient | null = null;
  private dir: string | null = null;
  private options: OpenOptions = {};
  private address: string;

  constructor(
    private readonly backend: Backend,
    private readonly tier: Tier,
    private readonly env: Environment,
    attachedAddress = '',
  ) {
    this.address = attachedAddress;
    this.id = backend === 'rocksdb' ? 'telha-server' : 'telha-server-pg';
    this.label = backend === 'rocksdb' ? 'Telha server (rocksdb)' : 'Telha server (postgres)';
    const store =
      backend === 'rocksdb'
        ? `storage.durability = ${this.durability}${tier.id === 'process' ? ' (the default)' : ''}`
        : `storage.kind = postgres, schema ${TELHA_PG_SCHEMA}, ` +
          (tier.id === 'process'
            ? 'synchronous_commit=off on its connections (libpq options in storage.url)'
            : 'PostgreSQL defaults (synchronous_commit=on)');
    this.settings = [
      `telha serve in a child process, a fresh one per measurement, first warmed with ${count(env.warmUpJobs)} jobs in another tenant scope (bulk, one at a time, 20 in flight, drained by a Worker); ${store}; SDK Worker defaults (one Work stream, prefetch 'auto')`,
    ];
    this.fillMethod =
      backend === 'rocksdb'
        ? 'server stopped, store replaced by a copy of the template the public API built (see Telha embedded), server restarted'
        : "server stopped, rows built with Telha's transition functions and codec, INSERT ... unnest 10k rows per statement (loading 1M through its own enqueue, lease and complete takes minutes), server restarted, count checked";
  }

  private get durability(): 'process' | 'fsync' {
    return this.tier.id === 'fsync' ? 'fsync' : 'process';
  }

  /** The `storage.*` keys the server gets through its environment. */
  private storageConfig(): Record<string, string> {
    if (this.backend === 'rocksdb') return { durability: this.durability };
    return { kind: 'postgres', url: this.tier.pgUrl, schema: TELHA_PG_SCHEMA };
  }

  private serverEnv(): Record<string, string> {
    const env: Record<string, string> = { TELHA_RETENTION__ENABLED: 'true' };
    for (const [key, value] of Object.entries(this.storageConfig())) env[`TELHA_STORAGE__${key.toUpperCase()}`] = value;
    for (const [key, value] of Object.entries(recoveryJobsConfig(this.options)))
      env[`TELHA_JOBS__${key.toUpperCase()}`] = String(value);
    return env;
  }

  private get producer(): TelhaClient {
    if (this.client === null) throw new Error(`${this.id}: not open`);
    return this.client;
  }

  private async startServer(): Promise<void> {
    if (this.dir === null) throw new Error(`${this.id}: no store directory`);
    this.server = await startServer(this.dir, this.serverEnv());
    this.address = this.server.address;
    this.client = new TelhaClient({ address: this.address });
    await this.warmUp();
  }

  /**
   * Every measurement starts a fresh server process, where the peers' servers
   * (Redis, PostgreSQL) have long been warm: run jobs through it first, in
   * another tenant scope and kind so the measured scope stays empty, until
   * its hot paths are compiled. On Node 20 an awaited enqueue costs the server
   * 2-3x its steady CPU for the first ~3,000 calls (bench/RESULTS.md), so the
   * warm-up makes that many of each call the workloads make: bulk, one at a
   * time, several in flight, and a Work stream draining them.
   */
  private async warmUp(): Promise<void> {
    const jobs = this.env.warmUpJobs;
    if (jobs <= 0) return;
    const scope = tenantScope('warm-up');
    const producer = this.producer;
    const third = Math.ceil(jobs / 3);
    for (let i = 0; i < third; i += 1_000)
      await producer.enqueueBatch(
        Array.from({ length: Math.min(1_000, third - i) }, () => ({ kind: WARM_UP_KIND })),
        scope,
      );
    for (let i = 0; i < third; i++) await producer.enqueue({ kind: WARM_UP_KIND }, scope);
    let next = 2 * third;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next++ < jobs) await producer.enqueue({ kind: WARM_UP_KIND }, scope);
      }),
    );
    let completed = 0;
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    const worker = new Worker({
      address: this.address,
      concurrency: 10,
      kinds: [WARM_UP_KIND],
      handler: () => Promise.resolve(),
      onCompleted: () => {
        if (++completed >= jobs) done();
      },
    }).start();
    await settlesWithin(finished, 30_000);
    await worker.close();
  }

  private async stopServer(): Promise<void> {
    this.client?.close();
    this.client = null;
    await this.server?.stop();
    this.server = null;
  }

  async open(options: OpenOptions = {}): Promise<void> {
    this.options = options;
    // The postgres backend ignores the directory, but `telha serve --data` wants one.
    this.dir = await mkdtemp(join(this.env.tmpRoot, `${this.id}-`));
    if (this.backend === 'postgres') await dropSchema(TELHA_PG_SCHEMA);
    await this.startServer();
  }

  async close(): Promise<void> {
    await this.stopServer();
    if (this.dir !== null) await rm(this.dir, { recursive: true, force: true });
    this.dir = null;
    if (this.backend === 'postgres') await dropSchema(TELHA_PG_SCHEMA);
  }

  async enqueueBulk(tags: readonly string[], delayMs?: number): Promise<void> {
    await this.producer.enqueueBatch(
      tags.map((tag) => ({ kind: KIND, payload: tag, ...(delayMs === undefined ? {} : { delayMs }) })),
      SCOPE,
    );
  }

  async enqueueOne(tag: string): Promise<void> {
    await this.producer.enqueue({ kind: KIND, payload: tag }, SCOPE);
  }

  startWorkers(concurrency: number, handler: JobHandler, options: WorkerOptions = {}): Promise<RunningWorkers> {
    const completed = new CompletionCounter();
    const worker = new Worker({
      address: this.address,
      concurrency,
      ...(options.prefetch === false ? { prefetch: 0 } : {}),
      kinds: [KIND],
      handler: (job) => handler(Buffer.from(job.payload).toString()),
      onCompleted: () => completed.add(),
    }).start();
    return Promise.resolve({
      waitCompleted: (n, deadline) => completed.wait(n, deadline),
      // A handler that never returns (the recovery child) is abandoned after a short grace.
      close: () => worker.close(2_000),
    });
  }

  async fillCompleted(n: number, progress: (done: number) => void): Promise<void> {
    if (this.dir === null) throw new Error(`${this.id}: not open`);
    await this.stopServer();
    if (this.backend === 'rocksdb') await loadRocksRetained(this.env.tmpRoot, this.dir, n, progress);
    else await loadPostgresRetained(this.tier.pgUrl, TELHA_PG_SCHEMA, n, progress);
    await this.startServer();
    const rows = await this.producer.counts(SCOPE);
    const retained = rows
      .filter((r) => r.state === JobState.Completed && r.kind === RETAINED_KIND)
      .reduce((sum, r) => sum + r.count, 0);
    if (retained !== n) throw new Error(`${this.id}: ${retained} completed rows after loading ${n}`);
  }

  attachInfo(): Record<string, string> {
    return { address: this.address };
  }
}

function factory(backend: Backend): SystemFactory {
  return {
    create: (tier: Tier, env: Environment) => new TelhaServer(backend, tier, env),
    attach: (tier, env, info) => Promise.resolve(new TelhaServer(backend, tier, env, info['address'] ?? '')),
  };
}

export const telhaServerRocks = factory('rocksdb');
export const telhaServerPostgres = factory('postgres');
