/**
 * `npm run bench:python`: the Python SDK's worker beside the TypeScript SDK's, and beside the
 * workers a Python user runs today, Celery 5 and RQ on Redis (127.0.0.1:6379, database 14), in
 * one run on this machine. For each concurrency (1, 10, 100): N no-op jobs enqueued beforehand,
 * then drained, jobs/s from the first handler's start to the last job done (for Telha: its
 * completion acknowledged by the server). And each one's awaited enqueue rate: one call at a
 * time, each answered before the next. Prints a Markdown table; asserts nothing about speed.
 *
 * The Python side is bench/python/drain.py, on Debian's interpreter (`apt-get install -y
 * python3-grpcio python3-protobuf python3-celery python3-rq python3-redis`). With
 * BENCH_PYTHON_BEFORE=<a copy of sdk/python/src> a column for that SDK is added, measured in the
 * same run (an A/B of two versions).
 *
 * Env: BENCH_PYTHON_JOBS (2,000), BENCH_PYTHON_ENQUEUES (500), BENCH_PYTHON_CONCURRENCY (1,10,100).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TelhaClient, Worker, tenantScope } from 'telha/client';
import { PYTHON } from '../test/support/python.ts';
import { completions, envNumber, fmt, formatTable, startServer } from './support.ts';

const JOBS = envNumber('BENCH_PYTHON_JOBS', 2_000);
const ENQUEUES = envNumber('BENCH_PYTHON_ENQUEUES', 500);
const CONCURRENCY = (process.env['BENCH_PYTHON_CONCURRENCY'] ?? '1,10,100').split(',').map(Number);
const BEFORE = process.env['BENCH_PYTHON_BEFORE'];
const DRAIN_PY = fileURLToPath(new URL('python/drain.py', import.meta.url));

interface Rates {
  readonly drain: number;
  readonly enqueue: number;
}

/** The TypeScript SDK's worker on the same workload as drain.py's Telha run. */
async function typescript(address: string, concurrency: number, run: number): Promise<Rates> {
  const scope = tenantScope('bench');
  const producer = new TelhaClient({ address });
  const started = performance.now();
  for (let i = 0; i < ENQUEUES; i++) await producer.enqueue({ kind: `bench.ts-enqueue.${run}` }, scope);
  const enqueue = ENQUEUES / ((performance.now() - started) / 1000);
  const kind = `bench.ts.${run}`;
  for (let i = 0; i < JOBS; i += 1000) {
    await producer.enqueueBatch(
      Array.from({ length: Math.min(1000, JOBS - i) }, () => ({ kind })),
      scope,
    );
  }
  let first = 0;
  const { onCompleted, done } = completions(JOBS);
  const worker = new Worker({
    address,
    concurrency,
    kinds: [kind],
    handler: () => {
      if (first === 0) first = performance.now();
      return Promise.resolve();
    },
    onCompleted,
  });
  worker.start();
  await done;
  const drain = JOBS / ((performance.now() - first) / 1000);
  await worker.close();
  producer.close();
  return { drain, enqueue };
}

/** One drain.py run: its JSON line. */
function python(system: string, concurrency: number, address: string, sdk?: string): Promise<Rates> {
  const env = { ...process.env, BENCH_PYTHON_ENQUEUES: String(ENQUEUES), ...(sdk ? { BENCH_PYTHON_SDK: sdk } : {}) };
  const child = spawn(PYTHON, [DRAIN_PY, system, String(concurrency), String(JOBS), address], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      const last = output.trim().split('\n').at(-1) ?? '';
      if (code === 0) resolve(JSON.parse(last) as Rates);
      else reject(new Error(`drain.py ${system} ${concurrency} exited with ${code}: ${output}`));
    });
  });
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'telha-bench-python-'));
const server = await startServer(dir);
const systems = ['TS worker', ...(BEFORE ? ['Python (before)'] : []), 'Python worker', 'Celery 5', 'RQ'];
const drains: string[][] = [];
const enqueues = new Map<string, number[]>();
try {
  for (const [run, concurrency] of CONCURRENCY.entries()) {
    // The systems in turn at each concurrency, so each row's numbers share the machine's state.
    const rates = new Map<string, Rates>();
    rates.set('TS worker', await typescript(server.address, concurrency, run));
    if (BEFORE) rates.set('Python (before)', await python('telha', concurrency, server.address, BEFORE));
    rates.set('Python worker', await python('telha', concurrency, server.address));
    rates.set('Celery 5', await python('celery', concurrency, server.address));
    rates.set('RQ', await python('rq', concurrency, server.address));
    const of = (name: string): Rates => rates.get(name) ?? { drain: NaN, enqueue: NaN };
    for (const name of systems) enqueues.set(name, [...(enqueues.get(name) ?? []), of(name).enqueue]);
    const py = of('Python worker').drain;
    drains.push([
      String(concurrency),
      ...systems.map((name) => fmt(of(name).drain)),
      `${fmt(py / of('Celery 5').drain, 1)}x`,
      `${fmt(py / of('RQ').drain, 1)}x`,
    ]);
    process.stderr.write(`concurrency ${concurrency} done\n`);
  }
} finally {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}
console.log(`Drain of ${fmt(JOBS)} no-op jobs enqueued beforehand, jobs/s (${os.cpus().length} cores):\n`);
console.log(formatTable(['concurrency', ...systems, 'Python/Celery', 'Python/RQ'], drains, ''));
console.log(`\nAwaited enqueues, one at a time (${fmt(ENQUEUES)} per run), calls/s, median of the runs:\n`);
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
console.log(formatTable(systems, [systems.map((name) => fmt(median(enqueues.get(name) ?? [])))], ''));
