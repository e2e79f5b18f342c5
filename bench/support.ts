/**
 * Helpers shared by the benchmarks that run the server or compare against
 * other queues (bench/server.ts, bench/peers.ts, bench/peers/*): number
 * formatting, percentiles, aligned tables, env knobs, and starting
 * `telha serve` as a child process.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { TelhaClient, Worker, tenantScope, type JobContext } from 'telha/client';

/**
 * The CLI as users run it (`npm start`, `npx telha serve`): the compiled package. The benchmarks
 * that start a server compile it first (`npm run compile` in their npm scripts), and use the SDK
 * the same way, by the package's own name: measured through tsx, which names every closure it
 * creates, the server spent ~10% and the SDK worker ~25% more CPU a job (bench/RESULTS.md).
 */
export const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

/** A non-negative number from the environment, or the fallback when unset or empty. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got ${raw}`);
  return value;
}

/** `1,234.5`; `-` for NaN and infinities, so a missing number never prints as a real one. */
export function fmt(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return '-';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** Job counts as people say them: 1M, 100k, 2,500. */
export function count(n: number): string {
  if (n >= 1_000_000 && n % 100_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1_000 && n % 1_000 === 0) return `${n / 1_000}k`;
  return fmt(n);
}

/** Nearest-rank percentile of an ascending array, `q` in [0, 1]; NaN when empty. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index] ?? NaN;
}

/** The middle value (the upper of the two middle ones for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux Node runs on). */
export const PROC_TICKS_PER_SECOND = 100;

/**
 * A process's or thread's name and CPU ticks (user + system) from its /proc `stat` file
 * (`/proc/<pid>/stat`, `/proc/<pid>/task/<tid>/stat`); throws if it is gone.
 */
export function procStat(path: string): { name: string; ticks: number } {
  const stat = readFileSync(path, 'latin1');
  // The name is in parentheses and may hold spaces; the fields after it are space-separated.
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  // Fields 14 and 15 of stat(5) (utime, stime) are 11 and 12 after the name.
  return { name: stat.slice(stat.indexOf('(') + 1, close), ticks: Number(fields[11]) + Number(fields[12]) };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Wait for `promise` at most `ms`; true if it settled in time. The timer never outlives the wait. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      timedOut,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** An aligned plain-text table: the first column left-aligned, the others right-aligned. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[], indent = '  '): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [
    `${indent}${line(headers)}`,
    `${indent}${widths.map((w) => '-'.repeat(w)).join('  ')}`,
    ...rows.map((row) => `${indent}${line(row)}`),
  ].join('\n');
}

export interface RunningServer {
  /** `host:port` it listens on. */
  readonly address: string;
  /** The child's pid, e.g. to report it. */
  readonly pid: number;
  /** SIGTERM, then wait for the process to exit (graceful shutdown closes the store). */
  stop(): Promise<void>;
  /** Settles when the process exits, however: `code 0`, `code 134`, `signal SIGKILL`. */
  readonly exited: Promise<string>;
}

/**
 * Spawn `telha serve` on `dir` listening on an ephemeral loopback port and
 * wait for its "telha listening on" line. `env` adds configuration
 * (`TELHA_<SECTION>__<KEY>`); retention is off unless `env` turns it on, so
 * no maintenance job runs during a measurement. `serverNodeArgs` are Node options for the
 * server alone (`--max-old-space-size=768`).
 */
export async function startServer(
  dir: string,
  env: Readonly<Record<string, string>> = {},
  startTimeoutMs = 60_000,
  serverNodeArgs: readonly string[] = [],
  /** A command the server runs under, e.g. `['valgrind', '--tool=callgrind']` (bench/instructions.ts). */
  launcher: readonly string[] = [],
): Promise<RunningServer> {
  // BENCH_SERVER_NODE_ARGS: Node options for the server alone, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
  // (NODE_OPTIONS refuses --cpu-prof, and would profile the benchmark's own process too).
  const nodeArgs = [
    ...serverNodeArgs,
    ...(process.env['BENCH_SERVER_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== ''),
  ];
  const serve = [...nodeArgs, CLI, 'serve', '--data', dir, '--listen', '127.0.0.1:0'];
  const [command, ...prefix] = [...launcher, process.execPath];
  const child = spawn(command ?? process.execPath, [...prefix, ...serve], {
    stdio: ['ignore', 'pipe', 'inherit'],
    // No HTTP listener unless `env` asks for one, so runs compare with those made before it existed.
    env: {
      ...process.env,
      TELHA_LOG_LEVEL: 'warn',
      TELHA_RETENTION__ENABLED: 'false',
      TELHA_SERVER__HTTP_ADDRESS: '',
      ...env,
    },
  });
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal === null ? `code ${code ?? '?'}` : `signal ${signal}`)),
  );
  // A server that neither listens nor exits (stuck opening its store) must not hang the benchmark.
  const lines = createInterface({ input: child.stdout });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    lines.close();
    child.kill('SIGKILL');
  }, startTimeoutMs);
  try {
    for await (const line of lines) {
      const match = /^telha listening on (\S+)$/.exec(line);
      if (match?.[1]) {
        // Keep draining stdout so a chatty server never blocks on a full pipe.
        child.stdout.resume();
        return {
          address: match[1],
          pid: child.pid ?? -1,
          exited,
          stop: async () => {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
            await exited;
          },
        };
      }
    }
  } finally {
    clearTimeout(timer);
  }
  throw new Error(
    timedOut ? `telha serve did not listen within ${startTimeoutMs / 1000} s` : 'telha serve exited before listening',
  );
}

/**
 * A count of the completions the store accepted, whose `done` settles at the `jobs`-th: pass its
 * `onCompleted` to one Worker, or to several draining the same jobs.
 */
export function completions(jobs: number): { readonly onCompleted: () => void; readonly done: Promise<void> } {
  let completed = 0;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    done,
    onCompleted: () => {
      if (++completed === jobs) finish();
    },
  };
}

/**
 * End-to-end drain through a server: a producer enqueues `jobs` no-op jobs in
 * batches of 100 while one SDK Worker at `concurrency` drains them. Jobs/s
 * from the first enqueue to the last accepted completion.
 */
export async function drainRate(
  address: string,
  options: {
    concurrency: number;
    jobs: number;
    kind: (index: number) => string;
    /** What each job's handler does; by default nothing, returning nothing. */
    handler?: (job: JobContext) => Promise<unknown>;
  },
): Promise<number> {
  const { concurrency, jobs, kind, handler = () => Promise.resolve() } = options;
  const scope = tenantScope('bench');
  const producer = new TelhaClient({ address });
  const { onCompleted, done } = completions(jobs);
  const worker = new Worker({ address, concurrency, handler, onCompleted });
  const started = performance.now();
  worker.start();
  for (let i = 0; i < jobs; i += 100) {
    await producer.enqueueBatch(
      Array.from({ length: Math.min(100, jobs - i) }, (_, j) => ({ kind: kind(i + j) })),
      scope,
    );
  }
  await done;
  const rate = jobs / ((performance.now() - started) / 1000);
  await worker.close();
  producer.close();
  return rate;
}
