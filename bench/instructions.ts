/**
 * `npm run bench:instructions`: instructions per job, counted by
 * `valgrind --tool=callgrind`, a measure that does not move with whatever
 * else the machine is doing (wall-clock rates here move by 30-50% between
 * runs minutes apart). Each workload (bench/instructions/workload.ts) runs
 * under callgrind with its instrumentation off (start-up at a fraction of
 * callgrind's cost) and turns counting on for N jobs after a warm-up, in
 * itself and in the server: what is counted over N is a job's cost.
 *
 *  - embedded: enqueue → lease → complete in-process, one job at a time;
 *  - single: awaited single enqueues through `telha serve` (the SDK's Produce stream);
 *  - drain c=10: N jobs enqueued in batches of 100, then drained by one SDK Worker at c=10.
 *
 * Through the server, the server's process and the client's are counted apart, and each
 * process's JavaScript thread apart from its other threads (V8's compiler and marker catch up
 * there at their own pace: bench/RESULTS.md, "Instructions per job").
 * Every process runs under callgrind (`--smc-check=all-non-file`, for V8's
 * generated code), so a run takes minutes. Needs `valgrind` (Debian package).
 *
 * Env: BENCH_INSTRUCTIONS_JOBS (2000), BENCH_INSTRUCTIONS_WARM_UP (5000),
 * BENCH_INSTRUCTIONS_WORKLOADS (embedded,single,drain; also `traced`: embedded with every span
 * recorded), BENCH_INSTRUCTIONS_KEEP=1 keeps the
 * callgrind files (for callgrind_annotate) and prints where they are.
 */
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { envNumber, fmt, formatTable, startServer } from './support.ts';

const JOBS = envNumber('BENCH_INSTRUCTIONS_JOBS', 2_000);
const WARM_UP = envNumber('BENCH_INSTRUCTIONS_WARM_UP', 5_000);
const WORKLOADS = (process.env['BENCH_INSTRUCTIONS_WORKLOADS'] ?? 'embedded,single,drain').split(',').filter(Boolean);
const KEEP = process.env['BENCH_INSTRUCTIONS_KEEP'] === '1';
const DRAIN_CONCURRENCY = 10;
const REPO = fileURLToPath(new URL('..', import.meta.url));
const WORKLOAD = fileURLToPath(new URL('instructions/workload.ts', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'telha-instructions-'));

function callgrind(name: string): string[] {
  return [
    'valgrind',
    '--tool=callgrind',
    '--smc-check=all-non-file',
    '--dump-instr=no',
    '--instr-atstart=no',
    // Each thread apart: V8 compiles and marks on threads of its own, so the JavaScript thread's
    // count (thread 1) is the event loop's cost of a job, without the compiler's catching up.
    '--separate-threads=yes',
    `--callgrind-out-file=${join(work, `${name}.out`)}`,
    '--log-file=' + join(work, `${name}.log`),
  ];
}

/** The instructions one callgrind output file counted, from its `totals:` line. */
function totalIn(file: string): number {
  const text = readFileSync(join(work, file), 'latin1');
  const match = /^totals: (\d+)/m.exec(text) ?? /^summary: (\d+)/m.exec(text);
  if (!match?.[1]) throw new Error(`no totals in ${file}`);
  return Number(match[1]);
}

/** What a run counted: on its JavaScript thread (the first, `-01`), and on all its threads together. */
function totalOf(name: string): Threads {
  const files = readdirSync(work).filter((file) => file.startsWith(`${name}.out-`));
  if (!files.includes(`${name}.out-01`)) throw new Error(`no callgrind output for ${name}'s main thread`);
  return { main: totalIn(`${name}.out-01`), all: files.reduce((sum, file) => sum + totalIn(file), 0) };
}

/** Run the workload under callgrind in this repository (so tsx and `telha` resolve), failing on a non-zero exit. */
function runWorkload(name: string, args: readonly string[], serverPid?: number): Promise<void> {
  const [command, ...prefix] = [...callgrind(name), process.execPath];
  const child = spawn(command ?? 'valgrind', [...prefix, '--import', 'tsx', WORKLOAD, ...args], {
    cwd: REPO,
    env: { ...process.env, BENCH_INSTRUCTIONS_PIDS: serverPid === undefined ? '' : String(serverPid) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return new Promise((resolve, reject) =>
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${name}: workload exited with ${signal ?? code ?? '?'}`)),
    ),
  );
}

interface Threads {
  /** On the JavaScript thread: the event loop's share, what bounds a process's rate. */
  main: number;
  /** On every thread: with V8's compiler and garbage collector, RocksDB's and libuv's threads. */
  all: number;
}

const NONE: Threads = { main: 0, all: 0 };

interface Count {
  /** Instructions of the process the workload runs in. */
  client: Threads;
  /** Instructions of `telha serve`; none for the embedded workload. */
  server: Threads;
}

async function measure(workload: string, jobs: number): Promise<Count> {
  const name = `${workload}-${jobs}`;
  if (workload === 'embedded' || workload === 'traced') {
    await runWorkload(name, [workload, String(WARM_UP), String(jobs)]);
    return { client: totalOf(name), server: NONE };
  }
  const dir = mkdtempSync(join(work, 'data-'));
  // Under callgrind the server takes minutes to start on a loaded machine.
  // Leases long enough that no job is reaped while callgrind slows everything down.
  const env = { TELHA_JOBS__LEASE_TTL_SECS: '3600' };
  const server = await startServer(dir, env, 600_000, [], callgrind(`${name}-server`));
  try {
    const args =
      workload === 'single'
        ? ['single', server.address, String(WARM_UP), String(jobs)]
        : ['drain', server.address, String(WARM_UP), String(jobs), String(DRAIN_CONCURRENCY)];
    await runWorkload(name, args, server.pid);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return { client: totalOf(name), server: totalOf(`${name}-server`) };
}

/** The commit measured; a copy outside git (an A/B pair's other side) names itself through BENCH_INSTRUCTIONS_LABEL. */
const commit =
  process.env['BENCH_INSTRUCTIONS_LABEL'] ??
  execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim();
console.log(
  `Instructions per job (callgrind), ${fmt(JOBS)} jobs counted after ${fmt(WARM_UP)} uncounted; node ${process.version}, ${commit}`,
);
const rows: string[][] = [];
const label: Readonly<Record<string, string>> = {
  embedded: 'embedded enqueue → lease → complete',
  traced: 'the same, every span recorded (OpenTelemetry SDK)',
  single: 'awaited single enqueue, server',
  drain: `drain c=${DRAIN_CONCURRENCY}, server`,
};
try {
  // The workloads side by side: instruction counts do not depend on what else runs, and each is
  // one or two processes mostly waiting on valgrind's single thread.
  const counts = await Promise.all(WORKLOADS.map((workload) => measure(workload, JOBS)));
  WORKLOADS.forEach((workload, i) => {
    const { client, server } = counts[i] as Count;
    const through = workload !== 'embedded' && workload !== 'traced';
    const perJob = (n: number): string => fmt(n / JOBS);
    rows.push([
      label[workload] ?? workload,
      perJob(client.main + server.main),
      through ? perJob(server.main) : '',
      through ? perJob(client.main) : '',
      perJob(client.all + server.all),
    ]);
  });
  console.log(`\n${formatTable(['workload', 'main threads, /job', 'server', 'client', 'all threads, /job'], rows)}`);
} finally {
  if (KEEP) console.log(`callgrind files kept in ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
