/**
 * Tenant-quota benchmark: prints numbers, never asserts on them.
 *
 * 1. Weighted shares (counts, not time): tenants of weights 1, 2 and 4, all backlogged, drained by
 *    one fleet worker through `lease` across every scope. Printed: each tenant's share of every
 *    window of 1,000 consecutive leases (the lowest and highest over all windows), beside the
 *    share its weight asks for (1/7, 2/7, 4/7), and the worst deviation relative to it.
 * 2. A full tenant's backlog: other tenants' work leased ten at a time and completed, with and
 *    without one tenant holding 100k ready jobs behind a full concurrency (10 leased). Printed: µs
 *    per claim (lease of 10 + completeEach) and their ratio. Time: run it on a quiet machine.
 *
 * Run: npm run bench:tenant-quotas
 *
 * Environment:
 *  BENCH_BACKEND=postgres  the same on PostgreSQL (a schema per store, dropped at the end)
 *  BENCH_LEASES=7000       leases drawn for the shares
 *  BENCH_BATCH=1           jobs per lease call for the shares
 *  BENCH_SCALE=1           multiply the full tenant's 100k jobs (default 0.1 on PostgreSQL)
 *  BENCH_OTHER=5000        other tenants' jobs drained per round of part 2
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { makeConfig } from '../src/core/config.ts';
import { tenantScope } from '../src/core/types.ts';
import type { Queue } from '../src/engine/queue.ts';
import { openQueue } from '../src/open.ts';
import { envNumber, fmt, formatTable } from './support.ts';

const BACKEND = process.env['BENCH_BACKEND'] ?? 'rocksdb';
if (BACKEND !== 'rocksdb' && BACKEND !== 'postgres') throw new Error('BENCH_BACKEND must be rocksdb or postgres');
const ON_POSTGRES = BACKEND === 'postgres';
const PG_URL = process.env['BENCH_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const LEASES = Math.round(envNumber('BENCH_LEASES', 7_000));
const SHARE_BATCH = Math.max(1, Math.round(envNumber('BENCH_BATCH', 1)));
const WINDOW = 1_000;
const FULL = Math.round(100_000 * envNumber('BENCH_SCALE', ON_POSTGRES ? 0.1 : 1));
const OTHER = Math.round(envNumber('BENCH_OTHER', 5_000));
const OTHER_TENANTS = 10;
const CLAIM = 10;
const WEIGHTS: readonly [string, number][] = [
  ['w1', 1],
  ['w2', 2],
  ['w4', 4],
];

async function withQueue<T>(run: (queue: Queue) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'telha-bench-tenants-'));
  const schema = `bench_tenants_${process.pid}_${Date.now()}`;
  const storage = ON_POSTGRES ? { kind: 'postgres' as const, url: PG_URL, schema } : { path: dir };
  const queue = await openQueue({
    config: makeConfig({ storage, retention: { enabled: false } }),
    services: false,
  });
  try {
    return await run(queue);
  } finally {
    await queue.close();
    await rm(dir, { recursive: true, force: true });
    if (ON_POSTGRES) {
      const pool = new pg.Pool({ connectionString: PG_URL });
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    }
  }
}

async function enqueue(queue: Queue, tenant: string, n: number): Promise<void> {
  for (let done = 0; done < n; done += 5_000) {
    await queue.enqueueBatch(
      Array.from({ length: Math.min(5_000, n - done) }, () => ({ kind: 'work' })),
      tenantScope(tenant),
    );
  }
}

/** Part 1: the tenant of each of `LEASES` leases, in the order the store granted them. */
async function shares(): Promise<string[]> {
  return withQueue(async (queue) => {
    const total = WEIGHTS.reduce((sum, [, w]) => sum + w, 0);
    for (const [tenant, weight] of WEIGHTS) {
      // Enough that every tenant stays backlogged to the last lease.
      await enqueue(queue, tenant, Math.ceil((LEASES * weight) / total) + SHARE_BATCH + 10);
      if (weight !== 1) await queue.setTenantLimit({ tenant, weight });
    }
    const order: string[] = [];
    while (order.length < LEASES) {
      const jobs = await queue.lease({ workerId: 'fleet', limit: Math.min(SHARE_BATCH, LEASES - order.length) });
      if (jobs.length === 0) throw new Error(`the store ran dry after ${order.length} leases`);
      for (const job of jobs) order.push(job.tenant ?? 'system');
    }
    return order;
  });
}

function windowShares(order: readonly string[]): string[][] {
  const total = WEIGHTS.reduce((sum, [, w]) => sum + w, 0);
  const counts = new Map(WEIGHTS.map(([t]) => [t, 0]));
  const low = new Map(WEIGHTS.map(([t]) => [t, Infinity]));
  const high = new Map(WEIGHTS.map(([t]) => [t, -Infinity]));
  for (let i = 0; i < order.length; i++) {
    const tenant = order[i] as string;
    counts.set(tenant, (counts.get(tenant) ?? 0) + 1);
    if (i >= WINDOW) {
      const gone = order[i - WINDOW] as string;
      counts.set(gone, (counts.get(gone) ?? 0) - 1);
    }
    if (i < WINDOW - 1) continue;
    for (const [t] of WEIGHTS) {
      const n = counts.get(t) ?? 0;
      low.set(t, Math.min(low.get(t) as number, n));
      high.set(t, Math.max(high.get(t) as number, n));
    }
  }
  return WEIGHTS.map(([tenant, weight]) => {
    const want = (WINDOW * weight) / total;
    const lo = low.get(tenant) as number;
    const hi = high.get(tenant) as number;
    const worst = Math.max(Math.abs(lo - want), Math.abs(hi - want)) / want;
    return [tenant, String(weight), fmt(want, 1), String(lo), String(hi), `${fmt(worst * 100, 2)}%`];
  });
}

/** Part 2: µs per claim of ten other tenants' jobs (lease + completeEach), with or without a full tenant. */
async function otherClaims(withFullTenant: boolean): Promise<number> {
  return withQueue(async (queue) => {
    if (withFullTenant) {
      await enqueue(queue, 'full', FULL);
      await queue.setTenantLimit({ tenant: 'full', concurrency: 10 });
      const held = await queue.lease({ workerId: 'holder', scope: tenantScope('full'), limit: 100 });
      if (held.length !== 10) throw new Error(`the full tenant should hold 10 leased, holds ${held.length}`);
    } else {
      // The same claim path (a tenant limit exists), without the backlog.
      await queue.setTenantLimit({ tenant: 'full', concurrency: 10 });
    }
    for (let i = 0; i < OTHER_TENANTS; i++) await enqueue(queue, `t${i}`, Math.ceil(OTHER / OTHER_TENANTS));
    let rounds = 0;
    const start = performance.now();
    for (;;) {
      const jobs = await queue.lease({ workerId: 'w', limit: CLAIM });
      if (jobs.length === 0) break;
      if (jobs.some((job) => job.tenant === 'full')) throw new Error('the full tenant was leased past its limit');
      await queue.completeEach(
        jobs.map((job) => ({ jobId: job.jobId, fence: { workerId: 'w', leaseGeneration: job.leaseGeneration } })),
      );
      rounds++;
    }
    return ((performance.now() - start) * 1000) / Math.max(1, rounds);
  });
}

async function main(): Promise<void> {
  const order = await shares();
  console.log(
    `tenant quotas (${BACKEND}): weights 1:2:4, ${LEASES} leases ${SHARE_BATCH} per claim, every window of ${WINDOW}`,
  );
  console.log(
    formatTable(['tenant', 'weight', 'wanted per window', 'fewest', 'most', 'worst deviation'], windowShares(order)),
  );
  if (process.env['BENCH_SHARES_ONLY'] === '1') return;
  const plain = await otherClaims(false);
  const behindFull = await otherClaims(true);
  console.log(`\nother tenants' claims, ${CLAIM} per lease, with and without a full tenant of ${FULL} ready jobs`);
  console.log(
    formatTable(
      ['store', 'µs per lease + completeEach'],
      [
        ['no backlog (a tenant limit held)', fmt(plain)],
        [`beside a full tenant of ${FULL} jobs`, fmt(behindFull)],
        ['ratio', fmt(behindFull / plain, 2)],
      ],
    ),
  );
}

await main();
