/**
 * Kind-limit benchmark: prints numbers, never asserts on them.
 *
 * A RocksDB store holds 100k ready jobs of kind `bulk` at the head of the key order, limited to
 * `concurrency = 10` and already full, and behind them ready `mail` jobs. A worker leases the mail
 * jobs ten at a time and completes them. Printed beside the same drain with no bulk backlog: µs
 * per claim (lease of 10 + completeEach). The live index skips a full lane's kind trees, so the
 * backlog should cost next to nothing per claim.
 *
 * Run: npm run bench:limits
 *
 * Environment:
 *  BENCH_SCALE=1   multiply the 100k bulk jobs
 *  BENCH_MAIL=5000 mail jobs drained per round
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { makeConfig } from '../src/core/config.ts';
import { tenantScope } from '../src/core/types.ts';
import type { Queue } from '../src/engine/queue.ts';
import { openQueue } from '../src/open.ts';
import { envNumber, fmt, formatTable } from './support.ts';

const BULK = Math.round(100_000 * envNumber('BENCH_SCALE', 1));
const MAIL = Math.round(envNumber('BENCH_MAIL', 5_000));
const BATCH = 10;
const acme = tenantScope('acme');

async function withQueue<T>(run: (queue: Queue) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'telha-bench-limits-'));
  const queue = await openQueue({
    config: makeConfig({ storage: { path: dir }, retention: { enabled: false } }),
    services: false,
  });
  try {
    return await run(queue);
  } finally {
    await queue.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function enqueue(queue: Queue, kind: string, n: number): Promise<void> {
  for (let done = 0; done < n; done += 5_000) {
    await queue.enqueueBatch(
      Array.from({ length: Math.min(5_000, n - done) }, () => ({ kind })),
      acme,
    );
  }
}

/** Lease and complete every `mail` job, ten at a time; µs per round trip of the two. */
async function drainMail(queue: Queue): Promise<number> {
  let rounds = 0;
  const start = performance.now();
  for (;;) {
    const jobs = await queue.lease({ workerId: 'w', limit: BATCH });
    if (jobs.length === 0) break;
    await queue.completeEach(
      jobs.map((job) => ({ jobId: job.jobId, fence: { workerId: 'w', leaseGeneration: job.leaseGeneration } })),
    );
    rounds++;
  }
  return ((performance.now() - start) * 1000) / Math.max(1, rounds);
}

async function main(): Promise<void> {
  const plain = await withQueue(async (queue) => {
    await enqueue(queue, 'mail', MAIL);
    return drainMail(queue);
  });
  const behindFullLane = await withQueue(async (queue) => {
    await enqueue(queue, 'bulk', BULK);
    await queue.setKindLimit({ kindPrefix: 'bulk', concurrency: 10 });
    // Fill the lane: its ten jobs stay leased, the rest wait at the head of the key order.
    await queue.lease({ workerId: 'holder', kinds: ['bulk'], limit: 100 });
    await enqueue(queue, 'mail', MAIL);
    const perClaim = await drainMail(queue);
    const [limit] = await queue.kindLimits();
    if (limit?.leased !== 10) throw new Error(`the bulk lane should hold 10 leased, holds ${limit?.leased}`);
    return perClaim;
  });
  console.log(`kind limits (RocksDB): ${MAIL} mail jobs drained ${BATCH} per claim`);
  console.log(
    formatTable(
      ['store', 'µs per lease + completeEach of 10'],
      [
        ['mail jobs only', fmt(plain)],
        [`behind a full lane of ${BULK} bulk jobs`, fmt(behindFullLane)],
      ],
    ),
  );
}

await main();
