/**
 * Where `telha serve`'s CPU goes, thread by thread, in a drain: the server in a
 * child process (RocksDB, or PostgreSQL with BENCH_BACKEND=postgres), BENCH_JOBS
 * no-op jobs enqueued in bulk first, then one SDK Worker at BENCH_CONCURRENCY
 * drains them. Before and after the drain it reads every server thread's
 * user+system time from /proc (Linux), and prints each thread's CPU per job,
 * the main thread's (the JavaScript event loop: what limits a drain) first,
 * beside the drain's rate and this process's CPU per job (the worker side).
 *
 * On RocksDB it runs two servers, the write thread on and off (`storage.write_thread`), a round
 * of each in turn.
 *
 * Env: BENCH_JOBS (20000), BENCH_CONCURRENCY (100), BENCH_BACKEND (rocksdb), BENCH_ROUNDS (3),
 * BENCH_WRITE_THREAD (both | on | off),
 * TELHA_TEST_PG_URL for PostgreSQL; server options through TELHA_* as usual.
 * Prints numbers only; nothing here asserts on time.
 */
import { readdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TelhaClient, Worker, tenantScope } from 'telha/client';
import {
  completions,
  envNumber,
  fmt,
  formatTable,
  median,
  PROC_TICKS_PER_SECOND,
  procStat,
  startServer,
  type RunningServer,
} from './support.ts';

const JOBS = envNumber('BENCH_JOBS', 20_000);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 100);
const ROUNDS = envNumber('BENCH_ROUNDS', 3);
/** BENCH_WRITE_THREAD: `both` (default) runs the server with its write thread on and off, `on` or `off` one of them. */
const WRITE_THREAD = process.env['BENCH_WRITE_THREAD'] ?? 'both';
const backend = process.env['BENCH_BACKEND'] ?? 'rocksdb';
const url = process.env['TELHA_TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `telha_bench_threads_${process.pid}`;

/** Each thread's name and CPU ticks (user + system) by thread id. */
function threadTicks(pid: number): Map<string, { name: string; ticks: number }> {
  const threads = new Map<string, { name: string; ticks: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const { name, ticks } = procStat(`/proc/${pid}/task/${tid}/stat`);
      threads.set(tid, { name: tid === String(pid) ? 'main (event loop)' : name, ticks });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return threads;
}

function selfTicks(): number {
  const usage = process.cpuUsage();
  return ((usage.user + usage.system) / 1e6) * PROC_TICKS_PER_SECOND;
}

interface Round {
  rate: number;
  /** CPU µs per job by thread name (threads of one name summed), main thread first. */
  server: Map<string, number>;
  worker: number;
}

async function round(address: string, pid: number): Promise<Round> {
  const scope = tenantScope('bench');
  const producer = new TelhaClient({ address });
  for (let i = 0; i < JOBS; i += 1_000) {
    await producer.enqueueBatch(
      Array.from({ length: Math.min(1_000, JOBS - i) }, () => ({ kind: 'drain' })),
      scope,
    );
  }
  const { onCompleted, done } = completions(JOBS);
  const before = threadTicks(pid);
  const selfBefore = selfTicks();
  const started = performance.now();
  const worker = new Worker({
    address,
    concurrency: CONCURRENCY,
    kinds: ['drain'],
    handler: () => Promise.resolve(),
    onCompleted,
  }).start();
  await done;
  const seconds = (performance.now() - started) / 1000;
  const after = threadTicks(pid);
  const selfAfter = selfTicks();
  await worker.close();
  producer.close();
  const server = new Map<string, number>();
  for (const [tid, { name, ticks }] of after) {
    const spent = ticks - (before.get(tid)?.ticks ?? 0);
    if (spent <= 0) continue;
    server.set(name, (server.get(name) ?? 0) + ((spent / PROC_TICKS_PER_SECOND) * 1e6) / JOBS);
  }
  return { rate: JOBS / seconds, server, worker: (((selfAfter - selfBefore) / PROC_TICKS_PER_SECOND) * 1e6) / JOBS };
}

/** The server configurations compared, their rounds taken in turn so drift hits both alike. */
const variants: { label: string; env: Record<string, string> }[] =
  backend === 'postgres'
    ? [{ label: 'postgres', env: {} }]
    : [
        { label: 'write thread on', env: { TELHA_STORAGE__WRITE_THREAD: 'true' } },
        { label: 'write thread off', env: { TELHA_STORAGE__WRITE_THREAD: 'false' } },
      ].filter((v) => WRITE_THREAD === 'both' || v.label.includes(WRITE_THREAD));
const servers: { label: string; dir: string; server: RunningServer; rounds: Round[] }[] = [];
try {
  for (const [i, variant] of variants.entries()) {
    const dir = mkdtempSync(join(tmpdir(), 'telha-bench-threads-'));
    const env: Record<string, string> = { ...variant.env };
    if (backend === 'postgres') {
      Object.assign(env, {
        TELHA_STORAGE__KIND: 'postgres',
        TELHA_STORAGE__URL: url,
        TELHA_STORAGE__SCHEMA: `${schema}_${i}`,
      });
    }
    const server = await startServer(dir, env);
    servers.push({ label: variant.label, dir, server, rounds: [] });
    // One round unmeasured, to get the hot paths compiled.
    await round(server.address, server.pid);
  }
  for (let i = 0; i < ROUNDS; i++) {
    for (const s of servers) s.rounds.push(await round(s.server.address, s.server.pid));
  }
} finally {
  for (const s of servers) {
    await s.server.stop();
    rmSync(s.dir, { recursive: true, force: true });
  }
  if (backend === 'postgres') {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    for (const i of variants.keys()) await client.query(`DROP SCHEMA IF EXISTS ${schema}_${i} CASCADE`);
    await client.end();
  }
}

console.log(
  `drain of ${fmt(JOBS)} pre-enqueued no-op jobs at concurrency ${CONCURRENCY}, ${backend}, Node ${process.version}; ` +
    `${ROUNDS} rounds each after one warm-up, the configurations in turn; CPU is user+system from /proc at ${PROC_TICKS_PER_SECOND} ticks/s; ` +
    `"node" threads are libuv's pool, V8's helpers and, when on, the write thread`,
);
for (const { label, rounds } of servers) report(label, rounds);

function report(label: string, rounds: readonly Round[]): void {
  const names = [...new Set(rounds.flatMap((r) => [...r.server.keys()]))].sort((a, b) =>
    a.startsWith('main') ? -1 : b.startsWith('main') ? 1 : a.localeCompare(b),
  );
  console.log(`\n${label}`);
  console.log(
    `  jobs/s by round: ${rounds.map((r) => fmt(r.rate)).join(', ')} (median ${fmt(median(rounds.map((r) => r.rate)))})`,
  );
  const rows = names.map((name) => [
    name,
    ...rounds.map((r) => fmt(r.server.get(name) ?? 0, 1)),
    fmt(median(rounds.map((r) => r.server.get(name) ?? 0)), 1),
  ]);
  const total = (r: Round): number => [...r.server.values()].reduce((a, b) => a + b, 0);
  rows.push(['server, all threads', ...rounds.map((r) => fmt(total(r), 1)), fmt(median(rounds.map(total)), 1)]);
  rows.push([
    'this process (SDK worker)',
    ...rounds.map((r) => fmt(r.worker, 1)),
    fmt(median(rounds.map((r) => r.worker)), 1),
  ]);
  console.log(formatTable(['CPU µs per job', ...rounds.map((_, i) => `round ${i + 1}`), 'median'], rows));
}
