/**
 * What the HTTP side costs the queue: the end-to-end drain rate through
 * `telha serve` with the HTTP listener and metrics on (the engine observed,
 * every transition counted, /metrics scraped every second as Prometheus
 * would) against the same server without them (no listener, no observer).
 * Two servers side by side, rounds alternating between them, the median of
 * each reported; the spread says how noisy the machine was.
 *
 *
 * Then the same question without the network and the machine's noise: CPU
 * time per job (enqueue, lease, complete, in batches of 100) of the engine
 * in this process, with the HTTP side's observer attached and without.
 *
 * Env: BENCH_METRICS_JOBS (default 20000), BENCH_METRICS_ROUNDS (5), BENCH_METRICS_CONCURRENCY (100).
 * Prints numbers only; nothing here asserts on time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { tenantScope } from 'telha/client';
import { makeConfig } from '../src/core/config.ts';
import { JobState, type JobRecord } from '../src/core/types.ts';
import { silentLogger } from '../src/core/logger.ts';
import { Telemetry } from '../src/telemetry/telemetry.ts';
import { openQueue } from '../src/open.ts';
import { freePort } from '../test/support/server.ts';
import { drainRate, envNumber, fmt, percentile, startServer, type RunningServer } from './support.ts';

/** One round: the jobs' kinds differ per round, so each round's series are new to the metrics. */
const drain = (address: string, round: number): Promise<number> =>
  drainRate(address, { concurrency: CONCURRENCY, jobs: JOBS, kind: (i) => `drain.k${i % 8}.r${round}` });

const JOBS = envNumber('BENCH_METRICS_JOBS', 20_000);
const ROUNDS = envNumber('BENCH_METRICS_ROUNDS', 5);
const CONCURRENCY = envNumber('BENCH_METRICS_CONCURRENCY', 100);
const scope = tenantScope('bench');

const median = (xs: readonly number[]): number =>
  percentile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

console.log('Metrics overhead: drain through telha serve with the HTTP listener and metrics on, and off');
console.log(`  node ${process.version}, ${cpus().length} CPU(s): ${cpus()[0]?.model ?? '?'}`);
console.log(`  ${fmt(JOBS)} no-op jobs per round, one SDK Worker at concurrency ${CONCURRENCY}, ${ROUNDS} rounds each`);
const dirs = [mkdtempSync(join(tmpdir(), 'telha-bench-off-')), mkdtempSync(join(tmpdir(), 'telha-bench-on-'))];
const httpPort = await freePort();
const servers: RunningServer[] = [];
let scraper: NodeJS.Timeout | null = null;
const offRates: number[] = [];
try {
  servers.push(await startServer(dirs[0] as string, { TELHA_SERVER__HTTP_ADDRESS: '' }));
  servers.push(
    await startServer(dirs[1] as string, {
      TELHA_SERVER__HTTP_ADDRESS: `127.0.0.1:${httpPort}`,
      TELHA_METRICS__ENABLED: 'true',
    }),
  );
  // Prometheus' usual interval is 15 s or more; every second is a harsher load.
  let scrapes = 0;
  scraper = setInterval(() => {
    void fetch(`http://127.0.0.1:${httpPort}/metrics`).then(async (r) => {
      await r.text();
      scrapes++;
    });
  }, 1_000);
  const off = offRates;
  const on: number[] = [];
  // One warm-up round each (JIT, RocksDB's first flushes), not counted.
  await drain((servers[0] as RunningServer).address, -1);
  await drain((servers[1] as RunningServer).address, -1);
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which goes first, so a drift of the machine's speed falls on both.
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const which of order) {
      const rate = await drain((servers[which] as RunningServer).address, round);
      (which === 0 ? off : on).push(rate);
    }
    console.log(`  round ${round + 1}: off ${fmt(off.at(-1) ?? NaN)} jobs/s, on ${fmt(on.at(-1) ?? NaN)} jobs/s`);
  }
  const mOff = median(off);
  const mOn = median(on);
  console.log(
    `\n  median off ${fmt(mOff)} jobs/s (${fmt(Math.min(...off))}-${fmt(Math.max(...off))}), on ${fmt(mOn)} jobs/s (${fmt(Math.min(...on))}-${fmt(Math.max(...on))}), ${scrapes} scrapes`,
  );
  console.log(`  metrics cost ${fmt((1 - mOn / mOff) * 100, 1)}% of the drain rate (target: at most 5%)`);
} finally {
  if (scraper !== null) clearInterval(scraper);
  await Promise.all(servers.map((s) => s.stop()));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

/**
 * The observer's own time per job, without the store or the network: the
 * HTTP side's listener (metrics and chart samples) fed the three
 * observations a job makes (enqueue, lease, complete) for real records.
 */
async function observerPerJob(): Promise<number> {
  const config = makeConfig({ retention: { enabled: false } });
  const queue = await openQueue({ config, inMemory: true, services: false });
  // Attached to the real queue, so it hears the events below exactly as in the server.
  const telemetry = new Telemetry(queue, config, silentLogger);
  const records = await Promise.all(
    Array.from({ length: 8 }, async (_, k) => (await queue.enqueue({ kind: `obs.k${k}` }, scope)).job),
  );
  const leased = await queue.lease({ workerId: 'w', scope, limit: 8 });
  const done = await Promise.all(
    leased.map(async (j) => (await queue.complete(j.jobId, { workerId: 'w', leaseGeneration: j.leaseGeneration })).job),
  );
  const n = 1_000_000;
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const k = i & 7;
    queue.events.transition('enqueue', [records[k] as JobRecord], null, 1);
    queue.events.transition('lease', [leased[k] as JobRecord], JobState.Pending, 2);
    queue.events.transition('complete', [done[k] as JobRecord], JobState.Leased, 3);
  }
  const perJob = ((performance.now() - started) * 1000) / n;
  telemetry.stop();
  await queue.close();
  return perJob;
}

console.log('\nThe observer alone (metrics and chart samples), three observations a job, 1M jobs a run');
const runs: number[] = [];
for (let round = 0; round < ROUNDS; round++) runs.push(await observerPerJob());
console.log(
  `  ${fmt(median(runs), 2)} µs a job (${fmt(Math.min(...runs), 2)}-${fmt(Math.max(...runs), 2)}); at the medians above the server spends ${fmt(1e6 / median(offRates), 0)} µs of wall time a job`,
);
