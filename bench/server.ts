/**
 * Through the server over loopback (issue "telha serve"): `telha serve` runs
 * in its own process on a fresh store; this process is the load generator
 * (SDK producer and workers), so the two share the machine's two cores like
 * a real deployment on one box would.
 *
 *  1. end-to-end jobs/s: a producer enqueues N jobs (batches of 100) while an
 *     SDK Worker with a no-op handler drains them, at concurrency 1, 10, 100;
 *     the clock runs from the first enqueue to the last accepted completion;
 *  2. enqueue-to-handler-start latency, p50/p99, with jobs arriving one by one
 *     at a steady rate while the workers wait on their Work streams;
 *  3. the engine's in-process cycle rate at 100 workers, for the ratio the issue asks for.
 *
 * Env: BENCH_E2E_JOBS (default 20000), BENCH_RATE (500), BENCH_LATENCY_SECONDS (10).
 * Prints numbers only; nothing here asserts on time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { TelhaClient, Worker, tenantScope } from 'telha/client';
import { makeConfig } from '../src/core/config.ts';
import { openQueue } from '../src/open.ts';
import { drainRate, envNumber, fmt, percentile, startServer } from './support.ts';

const E2E_JOBS = envNumber('BENCH_E2E_JOBS', 20_000);
const RATE = envNumber('BENCH_RATE', 500);
const LATENCY_SECONDS = envNumber('BENCH_LATENCY_SECONDS', 10);
const scope = tenantScope('bench');

async function latency(address: string): Promise<{ p50: number; p99: number; max: number; n: number }> {
  const producer = new TelhaClient({ address });
  const samples: number[] = [];
  const sentAt = new Map<string, number>();
  const worker = new Worker({
    address,
    concurrency: 10,
    kinds: ['latency'],
    handler: (job) => {
      const t = sentAt.get(Buffer.from(job.payload).toString());
      if (t !== undefined) samples.push(performance.now() - t);
      return Promise.resolve();
    },
  }).start();
  // The worker's Work stream is open and waiting before the first job arrives.
  await worker.waitForReady();
  const total = Math.round(RATE * LATENCY_SECONDS);
  const interval = 1000 / RATE;
  const start = performance.now();
  const sends: Promise<unknown>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const tag = String(i);
    sentAt.set(tag, performance.now());
    sends.push(producer.enqueue({ kind: 'latency', payload: tag }, scope));
  }
  await Promise.all(sends);
  while (samples.length < total) await new Promise((resolve) => setTimeout(resolve, 20));
  await worker.close();
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? NaN,
    n: sorted.length,
  };
}

async function engineRate(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'telha-bench-engine-'));
  const queue = await openQueue({
    config: makeConfig({ storage: { path: dir }, retention: { enabled: false } }),
    services: false,
  });
  let cycles = 0;
  const seconds = 3;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: 100 }, async (_, w) => {
      const workerId = `w${w}`;
      while (performance.now() < end) {
        await queue.enqueue({ kind: 'k' }, scope);
        const job = await queue.leaseNext({ workerId, scope });
        if (job) await queue.complete(job.jobId, { workerId, leaseGeneration: job.leaseGeneration });
        cycles++;
      }
    }),
  );
  await queue.close();
  rmSync(dir, { recursive: true, force: true });
  return cycles / seconds;
}

const dir = mkdtempSync(join(tmpdir(), 'telha-bench-server-'));
console.log('Telha server benchmark (telha serve in a child process, SDK load generator in this one, loopback)');
console.log(`  node ${process.version}, ${cpus().length} CPU(s): ${cpus()[0]?.model ?? '?'}`);
const server = await startServer(dir);
const rates: number[] = [];
try {
  console.log(
    `\n1. end-to-end drain, ${fmt(E2E_JOBS)} no-op jobs enqueued in batches of 100 while one SDK Worker drains them`,
  );
  console.log('   concurrency   jobs/s');
  for (const c of [1, 10, 100]) {
    const jobs = c === 1 ? Math.min(E2E_JOBS, 3_000) : E2E_JOBS;
    const rate = await drainRate(server.address, { concurrency: c, jobs, kind: () => `e2e.${c}` });
    rates.push(rate);
    console.log(
      `   ${String(c).padStart(11)}   ${fmt(rate).padStart(6)}${jobs !== E2E_JOBS ? `  (${fmt(jobs)} jobs)` : ''}`,
    );
  }

  console.log(
    `\n2. enqueue-to-handler-start latency at a steady ${RATE} jobs/s for ${LATENCY_SECONDS} s, 10 workers waiting on their Work streams`,
  );
  const l = await latency(server.address);
  console.log(
    `   p50 ${fmt(l.p50, 2)} ms   p99 ${fmt(l.p99, 2)} ms   max ${fmt(l.max, 2)} ms   (${fmt(l.n)} jobs; target p99 < 5 ms)`,
  );
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
console.log('\n3. the engine in-process, 100 workers (enqueue, lease, complete), for comparison');
const engine = await engineRate();
console.log(`   ${fmt(engine)} cycles/s in-process`);
const e2e100 = rates[2];
if (e2e100 !== undefined) {
  console.log(`   end-to-end at concurrency 100 ÷ in-process: ${fmt(e2e100 / engine, 2)} (target: at least 0.5)`);
}
