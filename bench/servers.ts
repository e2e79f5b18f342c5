/**
 * Several `telha serve` processes on one PostgreSQL store: the aggregate drain
 * with 1, 2 and 3 servers (BENCH_SERVERS, e.g. `1,2,3`), each with one SDK
 * Worker at BENCH_CONCURRENCY (100) draining the same BENCH_JOBS no-op jobs,
 * enqueued in bulk first. Beside the rate it prints where the machine's CPU
 * went during the drain, from /proc: the servers, PostgreSQL's processes, this
 * process (the workers), and how busy the machine was as a whole, which says
 * what limits it.
 *
 * Env: BENCH_JOBS (20000), BENCH_CONCURRENCY (100), BENCH_SERVERS (1,2,3), BENCH_ROUNDS (2),
 * TELHA_TEST_PG_URL (the `test` database). Prints numbers only; nothing here asserts on time.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
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
const ROUNDS = Math.max(1, envNumber('BENCH_ROUNDS', 2));
const COUNTS = (process.env['BENCH_SERVERS'] ?? '1,2,3').split(',').map(Number);
const url = process.env['TELHA_TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
/** CPU ticks (user + system) of one process, all its threads; 0 once it is gone. */
function processTicks(pid: number): number {
  try {
    return procStat(`/proc/${pid}/stat`).ticks;
  } catch {
    return 0;
  }
}

/** Every PostgreSQL process's ticks (the postmaster, its backends and helpers) by pid. */
function postgresTicks(): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = procStat(`/proc/${entry}/stat`);
      if (stat.name === 'postgres') ticks.set(Number(entry), stat.ticks);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return ticks;
}

/** The whole machine's busy and total ticks, from the first line of /proc/stat. */
function machineTicks(): { busy: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'latin1').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  // idle and iowait
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
}

interface Round {
  rate: number;
  /** CPU µs per job. */
  servers: number;
  postgres: number;
  workers: number;
  /** How busy the machine's cores were, 0-1. */
  machineBusy: number;
}

async function round(servers: readonly RunningServer[]): Promise<Round> {
  const scope = tenantScope('bench');
  const producer = new TelhaClient({ address: servers[0]?.address ?? '' });
  for (let i = 0; i < JOBS; i += 1_000) {
    await producer.enqueueBatch(
      Array.from({ length: Math.min(1_000, JOBS - i) }, () => ({ kind: 'drain' })),
      scope,
    );
  }
  producer.close();
  const { onCompleted, done } = completions(JOBS);
  const serverBefore = servers.map((s) => processTicks(s.pid));
  const pgBefore = postgresTicks();
  const selfBefore = process.cpuUsage();
  const machineBefore = machineTicks();
  const started = performance.now();
  const workers = servers.map((s) =>
    new Worker({
      address: s.address,
      concurrency: CONCURRENCY,
      kinds: ['drain'],
      handler: () => Promise.resolve(),
      onCompleted,
    }).start(),
  );
  await done;
  const seconds = (performance.now() - started) / 1000;
  const serverTicks = servers.reduce((sum, s, i) => sum + processTicks(s.pid) - (serverBefore[i] ?? 0), 0);
  let pgTicks = 0;
  for (const [pid, ticks] of postgresTicks()) pgTicks += ticks - (pgBefore.get(pid) ?? 0);
  const self = process.cpuUsage(selfBefore);
  const machine = machineTicks();
  await Promise.all(workers.map((w) => w.close()));
  const perJob = (ticks: number): number => ((ticks / PROC_TICKS_PER_SECOND) * 1e6) / JOBS;
  return {
    rate: JOBS / seconds,
    servers: perJob(serverTicks),
    postgres: perJob(pgTicks),
    workers: (self.user + self.system) / JOBS,
    machineBusy: (machine.busy - machineBefore.busy) / Math.max(1, machine.total - machineBefore.total),
  };
}

const results: { servers: number; rounds: Round[] }[] = [];
for (const count of COUNTS) {
  const schema = `telha_bench_servers_${process.pid}_${count}`;
  const dirs: string[] = [];
  const running: RunningServer[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'telha-bench-servers-'));
      dirs.push(dir);
      running.push(
        await startServer(dir, {
          TELHA_STORAGE__KIND: 'postgres',
          TELHA_STORAGE__URL: url,
          TELHA_STORAGE__SCHEMA: schema,
        }),
      );
    }
    // One round unmeasured, to get every server's hot paths compiled.
    await round(running);
    const rounds: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) rounds.push(await round(running));
    results.push({ servers: count, rounds });
  } finally {
    for (const server of running) await server.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  }
}

console.log(
  `aggregate drain of ${fmt(JOBS)} pre-enqueued no-op jobs on one PostgreSQL store, one SDK Worker at concurrency ` +
    `${CONCURRENCY} per server (all in this process), Node ${process.version}, ${cpus().length} cores; ` +
    `medians of ${ROUNDS} rounds after a warm-up; CPU µs per job from /proc`,
);
console.log(
  formatTable(
    ['servers', 'jobs/s', 'servers µs/job', 'PostgreSQL µs/job', 'workers µs/job', 'machine busy'],
    results.map(({ servers, rounds }) => [
      String(servers),
      fmt(median(rounds.map((r) => r.rate))),
      fmt(median(rounds.map((r) => r.servers)), 1),
      fmt(median(rounds.map((r) => r.postgres)), 1),
      fmt(median(rounds.map((r) => r.workers)), 1),
      `${fmt(median(rounds.map((r) => r.machineBusy)) * 100)}%`,
    ]),
  ),
);
