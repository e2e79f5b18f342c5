/**
 * Fairness benchmark: prints numbers, never asserts on them.
 *
 * One tenant holds 100k Pending jobs and 50 tenants hold 10 each; a fleet of workers drains them
 * through `lease` across every scope (the fleet's poll) and `completeEach`. Printed for the fair
 * order (`jobs.fair_tenants = true`, the default) beside key order (`false`, the baseline):
 *  - by which lease every small tenant had its first job, and by which all of its jobs;
 *  - the drain rate of the whole store, in jobs/s (the best of the rounds).
 *
 * Run: npm run bench:fairness
 *
 * Environment:
 *  BENCH_SCALE=1          multiply the big tenant's 100k jobs (default 1; 0.1 on PostgreSQL)
 *  BENCH_ROUNDS=4         rounds per order, alternated (the best drain rate is printed)
 *  BENCH_WORKERS=10       concurrent worker loops
 *  BENCH_BATCH=10         jobs per lease call
 *  BENCH_BACKEND=postgres the same on PostgreSQL (a schema per store, dropped at the end)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { makeConfig } from '../src/core/config.ts';
import { tenantScope, type JobRecord } from '../src/core/types.ts';
import type { Queue } from '../src/engine/queue.ts';
import { openQueue } from '../src/open.ts';
import { envNumber, fmt, formatTable } from './support.ts';

const BACKEND = process.env['BENCH_BACKEND'] ?? 'rocksdb';
if (BACKEND !== 'rocksdb' && BACKEND !== 'postgres') throw new Error('BENCH_BACKEND must be rocksdb or postgres');
const ON_POSTGRES = BACKEND === 'postgres';
const PG_URL = process.env['BENCH_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const BIG_JOBS = Math.round(100_000 * envNumber('BENCH_SCALE', ON_POSTGRES ? 0.1 : 1));
const SMALL_TENANTS = 50;
const SMALL_JOBS = 10;
const ROUNDS = Math.max(1, Math.round(envNumber('BENCH_ROUNDS', 4)));
const WORKERS = Math.max(1, Math.round(envNumber('BENCH_WORKERS', 10)));
const BATCH = Math.max(1, Math.round(envNumber('BENCH_BATCH', 10)));
const ENQUEUE_BATCH = 5_000;

interface Outcome {
  /** The lease (1-based, in the order the store granted them) by which every small tenant had one job. */
  readonly everyFirst: number;
  /** The lease by which every small tenant's every job was leased. */
  readonly everyAll: number;
  readonly jobsPerSecond: number;
}

async function open(fair: boolean, dir: string, schema: string): Promise<Queue> {
  const storage = ON_POSTGRES ? { kind: 'postgres' as const, url: PG_URL, schema } : { path: dir };
  const config = makeConfig({ storage, retention: { enabled: false }, jobs: { fair_tenants: fair } });
  return openQueue({ config, services: false });
}

async function fill(queue: Queue): Promise<void> {
  for (let done = 0; done < BIG_JOBS; done += ENQUEUE_BATCH) {
    const n = Math.min(ENQUEUE_BATCH, BIG_JOBS - done);
    await queue.enqueueBatch(
      Array.from({ length: n }, () => ({ kind: 'work' })),
      tenantScope('whale'),
    );
  }
  for (let t = 0; t < SMALL_TENANTS; t++) {
    await queue.enqueueBatch(
      Array.from({ length: SMALL_JOBS }, () => ({ kind: 'work' })),
      tenantScope(`small-${t}`),
    );
  }
}

async function drain(queue: Queue): Promise<Outcome> {
  const total = BIG_JOBS + SMALL_TENANTS * SMALL_JOBS;
  let granted = 0;
  let done = 0;
  const firstAt = new Map<string, number>();
  const leftPerTenant = new Map<string, number>();
  let everyFirst = NaN;
  let everyAll = NaN;
  let tenantsDone = 0;
  const note = (job: JobRecord): void => {
    granted++;
    const tenant = job.tenant ?? '';
    if (tenant === 'whale') return;
    if (!firstAt.has(tenant)) {
      firstAt.set(tenant, granted);
      if (firstAt.size === SMALL_TENANTS) everyFirst = granted;
    }
    const left = (leftPerTenant.get(tenant) ?? SMALL_JOBS) - 1;
    leftPerTenant.set(tenant, left);
    if (left === 0 && ++tenantsDone === SMALL_TENANTS) everyAll = granted;
  };
  const started = performance.now();
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      const workerId = `fleet-${w}`;
      while (done < total) {
        const jobs = await queue.lease({ workerId, limit: BATCH });
        if (jobs.length === 0) {
          if (done >= total) return;
          continue;
        }
        for (const job of jobs) note(job);
        await queue.completeEach(
          jobs.map((job) => ({ jobId: job.jobId, fence: { workerId, leaseGeneration: job.leaseGeneration } })),
        );
        done += jobs.length;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { everyFirst, everyAll, jobsPerSecond: total / seconds };
}

async function main(): Promise<void> {
  const schemas: string[] = [];
  const results = new Map<boolean, Outcome[]>([
    [true, []],
    [false, []],
  ]);
  console.log(
    `fairness: ${BACKEND}, one tenant with ${fmt(BIG_JOBS)} jobs and ${SMALL_TENANTS} tenants with ${SMALL_JOBS} each; ` +
      `${WORKERS} workers leasing ${BATCH} at a time, ${ROUNDS} round(s) per order, Node ${process.version}`,
  );
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which order goes first, so neither always runs on a warmer (or busier) machine.
    for (const fair of round % 2 === 0 ? [true, false] : [false, true]) {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'telha-fair-'));
      const schema = `telha_bench_fair_${process.pid}_${round}_${fair ? 1 : 0}`;
      if (ON_POSTGRES) schemas.push(schema);
      const queue = await open(fair, dir, schema);
      try {
        await fill(queue);
        results.get(fair)?.push(await drain(queue));
      } finally {
        await queue.close();
        await rm(dir, { recursive: true, force: true });
      }
    }
  }
  const row = (fair: boolean): string[] => {
    const outcomes = results.get(fair) ?? [];
    const best = Math.max(...outcomes.map((o) => o.jobsPerSecond));
    const first = outcomes[0] as Outcome;
    return [
      fair ? 'fair (jobs.fair_tenants = true)' : 'key order (false)',
      fmt(first.everyFirst),
      fmt(first.everyAll),
      fmt(best),
    ];
  };
  const fairRate = Math.max(...(results.get(true) ?? []).map((o) => o.jobsPerSecond));
  const keyRate = Math.max(...(results.get(false) ?? []).map((o) => o.jobsPerSecond));
  console.log(
    formatTable(
      ['order', 'every small tenant served by lease', 'all their jobs by lease', 'drain jobs/s'],
      [row(true), row(false)],
    ),
  );
  console.log(`  fair drain rate ÷ key order: ${fmt(fairRate / keyRate, 2)}x`);
  if (ON_POSTGRES) {
    const db = new pg.Client({ connectionString: PG_URL });
    await db.connect();
    for (const schema of schemas) await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await db.end();
  }
}

await main();
