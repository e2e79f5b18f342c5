/**
 * The measurements, each on a freshly opened system (schema or keys or store
 * reset by `open`, removed by `close`), each counting handler invocations
 * per job so every number comes with its exactly-once check.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { percentile, sleep } from '../support.ts';
import type { Check } from './results.ts';
import type { Environment, OpenOptions, RecoverySettings, RunningWorkers, System, Tier } from './types.ts';

const CHILD = fileURLToPath(new URL('./recovery-child.ts', import.meta.url));

/** Jobs per bulk call, the same for every system (Telha allows 10,000, the others have no hard limit). */
export const BULK_CHUNK = 1_000;
/** How long a run with a future-dated job keeps it in the future: far past the end of any measurement. */
export const DELAY_MS = 3_600_000;

/** Counts handler invocations per tag and when each tag first started. */
export class Ledger {
  private readonly runs = new Map<string, number>();
  readonly startedAt = new Map<string, number>();
  firstStart = NaN;

  /** The handler body of every measured job: note the start, do nothing else. */
  readonly handler = (tag: string): Promise<void> => {
    const now = performance.now();
    if (Number.isNaN(this.firstStart)) this.firstStart = now;
    this.runs.set(tag, (this.runs.get(tag) ?? 0) + 1);
    if (!this.startedAt.has(tag)) this.startedAt.set(tag, now);
    return Promise.resolve();
  };

  get distinct(): number {
    return this.runs.size;
  }

  /** Resolve when `n` distinct tags have started, or at the deadline. */
  async waitDistinct(n: number, deadline: number): Promise<number> {
    while (this.runs.size < n && performance.now() < deadline) await sleep(5);
    return this.runs.size;
  }

  check(measurement: string, expected: readonly string[], capped: boolean): Check {
    const wanted = new Set(expected);
    let missing = 0;
    let twice = 0;
    for (const tag of expected) {
      const n = this.runs.get(tag) ?? 0;
      if (n === 0) missing++;
      else if (n > 1) twice++;
    }
    let stray = 0;
    for (const tag of this.runs.keys()) if (!wanted.has(tag)) stray++;
    return {
      measurement,
      expected: expected.length,
      missing: capped ? 0 : missing,
      twice,
      stray,
      notReached: capped ? missing : 0,
    };
  }
}

export function makeTags(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
}

/** Enqueue `tags` through the bulk API, {@link BULK_CHUNK} per call, one call after another. */
export async function enqueueChunks(system: System, tags: readonly string[], delayMs?: number): Promise<void> {
  for (let i = 0; i < tags.length; i += BULK_CHUNK) await system.enqueueBulk(tags.slice(i, i + BULK_CHUNK), delayMs);
}

/** Open, run, and always close (close errors are reported only if the run itself succeeded). */
export async function withOpen<T>(system: System, options: OpenOptions, work: () => Promise<T>): Promise<T> {
  await system.open(options);
  let result: T;
  try {
    result = await work();
  } catch (error) {
    await system.close().catch(() => undefined);
    throw error;
  }
  await system.close();
  return result;
}

/**
 * One unmeasured pass per system and tier, so the first measurement does not
 * pay for loading and JIT-compiling its client library: some single and bulk
 * enqueues and a short drain, at most `capMs` long.
 */
export async function warmUp(system: System, jobs: number, capMs: number): Promise<void> {
  await withOpen(system, {}, async () => {
    const single = Math.min(100, jobs);
    for (const tag of makeTags('warm-single', single)) await system.enqueueOne(tag);
    await enqueueChunks(system, makeTags('warm-bulk', jobs - single));
    const ledger = new Ledger();
    // 10 handlers: within every system's default pool size (graphile-worker warns above its 10 connections).
    const workers = await system.startWorkers(10, ledger.handler);
    try {
      await workers.waitCompleted(jobs, performance.now() + capMs);
    } finally {
      await workers.close();
    }
  });
}

export interface DrainResult {
  /** Jobs/s of the bulk load before the drain. */
  readonly enqueueRate: number;
  /** Jobs/s from the first handler start to the last completion the system reported. */
  readonly rate: number;
  readonly completed: number;
  readonly seconds: number;
  readonly capped: boolean;
  readonly check: Check;
}

export interface DrainOptions {
  readonly name: string;
  readonly concurrency: number;
  readonly jobs: number;
  readonly capMs: number;
  /** Runs on the opened system before the measured jobs are loaded (fill retained or delayed rows). */
  readonly prepare?: () => Promise<void>;
  /** `false`: the workers hold no job beyond their concurrency (see `System.startWorkers`). */
  readonly prefetch?: false;
}

/**
 * Load `jobs` no-op jobs with the bulk API (timed), then start `concurrency`
 * handlers and time from the first handler start to the system reporting the
 * last completion. At the cap, the rate is over the jobs completed by then.
 */
export async function drain(system: System, options: DrainOptions): Promise<DrainResult> {
  return withOpen(system, {}, async () => {
    await options.prepare?.();
    const tags = makeTags(options.name, options.jobs);
    const loadStart = performance.now();
    await enqueueChunks(system, tags);
    const enqueueRate = tags.length / ((performance.now() - loadStart) / 1000);
    const ledger = new Ledger();
    const workers = await system.startWorkers(
      options.concurrency,
      ledger.handler,
      options.prefetch === false ? { prefetch: false } : {},
    );
    let completed: number;
    let end: number;
    try {
      completed = await workers.waitCompleted(tags.length, performance.now() + options.capMs);
      end = performance.now();
    } finally {
      await workers.close();
    }
    const capped = completed < tags.length;
    const seconds = (end - ledger.firstStart) / 1000;
    return {
      enqueueRate,
      rate: completed > 0 ? completed / seconds : 0,
      completed,
      seconds,
      capped,
      check: ledger.check(options.name, tags, capped),
    };
  });
}

export interface EnqueueResult {
  readonly sequential: number;
  readonly inFlight: number;
}

/** One job per call: `sequential` calls awaited one after another, then `inFlightJobs` with `window` calls outstanding. */
export async function enqueueOneByOne(
  system: System,
  sequential: number,
  inFlightJobs: number,
  window: number,
): Promise<EnqueueResult> {
  return withOpen(system, {}, async () => {
    let started = performance.now();
    for (const tag of makeTags('seq', sequential)) await system.enqueueOne(tag);
    const sequentialRate = sequential / ((performance.now() - started) / 1000);
    const tags = makeTags('par', inFlightJobs);
    let next = 0;
    started = performance.now();
    await Promise.all(
      Array.from({ length: Math.min(window, tags.length) }, async () => {
        while (next < tags.length) await system.enqueueOne(tags[next++]!);
      }),
    );
    return { sequential: sequentialRate, inFlight: inFlightJobs / ((performance.now() - started) / 1000) };
  });
}

export interface LatencyResult {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly started: number;
  readonly sent: number;
  readonly check: Check;
}

/**
 * Jobs enqueued one at a time at a steady `rate` for `seconds` while
 * `concurrency` handlers wait idle; each sample is enqueue call → handler
 * start. Jobs not started within the cap after the last send count as
 * infinitely late (they push p99 and max to "-").
 */
export async function latency(
  system: System,
  options: { rate: number; seconds: number; concurrency: number; capMs: number },
): Promise<LatencyResult> {
  return withOpen(system, {}, async () => {
    const ledger = new Ledger();
    const workers = await system.startWorkers(options.concurrency, ledger.handler);
    try {
      // Let the workers reach their idle wait (long poll, BRPOP, LISTEN, polling loop) first.
      await sleep(500);
      const total = Math.round(options.rate * options.seconds);
      const tags = makeTags('lat', total);
      const sentAt = new Map<string, number>();
      const interval = 1000 / options.rate;
      const start = performance.now();
      const sends: Promise<void>[] = [];
      for (let i = 0; i < total; i++) {
        const wait = start + i * interval - performance.now();
        if (wait > 1) await sleep(wait);
        const tag = tags[i]!;
        sentAt.set(tag, performance.now());
        sends.push(system.enqueueOne(tag));
      }
      await Promise.all(sends);
      const deadline = performance.now() + options.capMs;
      await ledger.waitDistinct(total, deadline);
      const completed = await workers.waitCompleted(total, deadline);
      const samples = tags.map((tag) => {
        const startedAt = ledger.startedAt.get(tag);
        return startedAt === undefined ? Infinity : startedAt - sentAt.get(tag)!;
      });
      samples.sort((a, b) => a - b);
      return {
        p50: percentile(samples, 0.5),
        p99: percentile(samples, 0.99),
        max: samples[samples.length - 1] ?? NaN,
        started: ledger.distinct,
        sent: total,
        check: ledger.check('latency', tags, completed < total),
      };
    } finally {
      await workers.close();
    }
  });
}

export interface RecoveryResult {
  /** Seconds from SIGKILL of the worker holding the job to the job's handler starting in another worker. */
  readonly seconds: number;
  readonly check: Check;
}

/**
 * A worker in a child process takes the only job and hangs in its handler;
 * the moment it says so it is SIGKILLed, and another worker (already idle in
 * this process, or started right after for a store only one process may
 * open) waits for the job to come back.
 */
export async function recovery(
  system: System,
  tier: Tier,
  env: Environment,
  settings: RecoverySettings,
  capMs: number,
): Promise<RecoveryResult> {
  const options: OpenOptions = { recovery: settings };
  return withOpen(system, options, async () => {
    const tag = 'recovery-0';
    await system.enqueueOne(tag);
    await system.handOver?.release();
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        CHILD,
        system.id,
        JSON.stringify(tier),
        JSON.stringify(env),
        JSON.stringify(system.attachInfo()),
        JSON.stringify(options),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const ledger = new Ledger();
    let workers: RunningWorkers | null = null;
    try {
      await waitForLine(child.stdout, `started ${tag}`, 60_000);
      if (!system.handOver) workers = await system.startWorkers(1, ledger.handler);
      const killedAt = performance.now();
      child.kill('SIGKILL');
      await exited;
      if (system.handOver) {
        await system.handOver.reacquire();
        workers = await system.startWorkers(1, ledger.handler);
      }
      const deadline = performance.now() + capMs;
      await ledger.waitDistinct(1, deadline);
      const started = ledger.startedAt.get(tag);
      const completed = workers === null ? 0 : await workers.waitCompleted(1, deadline);
      return {
        seconds: started === undefined ? Infinity : (started - killedAt) / 1000,
        check: ledger.check('recovery', [tag], completed < 1),
      };
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await workers?.close();
    }
  });
}

async function waitForLine(stream: NodeJS.ReadableStream, wanted: string, timeoutMs: number): Promise<void> {
  const lines = createInterface({ input: stream });
  const timer = setTimeout(() => lines.close(), timeoutMs);
  try {
    for await (const line of lines) if (line.trim() === wanted) return;
    throw new Error(`the recovery child never printed "${wanted}" (exited or ${timeoutMs / 1000} s passed)`);
  } finally {
    clearTimeout(timer);
  }
}
