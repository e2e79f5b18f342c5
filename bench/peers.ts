/**
 * `npm run bench:peers`: Telha beside the queues a Node.js user would pick
 * instead (BullMQ on Redis, graphile-worker and pg-boss on PostgreSQL), one
 * after another on this machine, on the same workloads, each checked for
 * running every job exactly once. One table per workload and durability
 * tier, with Telha's ratio to the best peer. Prints numbers; asserts nothing
 * about speed. The peers' releases follow the Node it runs on (pg-boss 12 and
 * graphile-worker 0.18 from Node 22, 10 and 0.17 before: peers/releases.ts),
 * and the report names both.
 *
 * Workloads (sizes: env below; BENCH_QUICK=1 shrinks everything for a smoke run):
 *  1. enqueue: bulk (each system's bulk API, calls of 1,000), one at a time
 *     awaited in sequence, and one at a time with 100 calls in flight;
 *  2. drain of N pre-enqueued no-op jobs at concurrency 1, 10, 100;
 *  3. enqueue-to-handler-start latency at a steady rate, workers idle;
 *  4. the drain with 1M completed jobs retained, and with 100k delayed jobs ahead;
 *  5. recovery: a worker process SIGKILLed holding a job; time until the job
 *     runs again elsewhere, with the same 5 s lease on every system that has one.
 * Before them, the transport's floor (bench/peers/floor.ts): sequential 64-byte echoes
 * between two processes over raw TCP, node:http2 and grpc-js; the report gives each
 * Telha server path's rate as a share of the grpc-js bidi echo's.
 * Tiers: "process-crash-safe" runs everything; "fsync" runs workloads 1
 * (bulk) and 2 on Telha and the peers' better-performing configurations.
 *
 * Env: BENCH_QUICK=1, BENCH_PEERS_JSON=path, BENCH_PEERS_SYSTEMS=id,id,
 * BENCH_PEERS_TIERS=process,fsync, BENCH_PEERS_JOBS, BENCH_PEERS_JOBS_C1,
 * BENCH_PEERS_SEQUENTIAL, BENCH_PEERS_IN_FLIGHT_JOBS, BENCH_PEERS_RATE,
 * BENCH_PEERS_LATENCY_SECONDS, BENCH_PEERS_RETAINED, BENCH_PEERS_DELAYED,
 * BENCH_PEERS_LOADED_CONCURRENCY, BENCH_PEERS_CAP_SECONDS,
 * BENCH_PEERS_LEASE_SECONDS, BENCH_PEERS_CHECK_SECONDS, BENCH_PEERS_WARM_UP_JOBS,
 * BENCH_PEERS_FLOOR_ROUND_TRIPS; services:
 * BENCH_PEERS_PG_URL / _PG_ADMIN_URL / _PG_DATABASE, BENCH_PEERS_REDIS_HOST / _PORT.
 */
import { rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { count, envNumber, fmt, formatTable } from './support.ts';
import { measureFloor, type FloorPath } from './peers/floor.ts';
import { describe, RedisPersistence, TIERS, type Description } from './peers/environment.ts';
import { FACTORIES, factory, RELEASES } from './peers/registry.ts';
import { renderSettings, renderViolations, renderWorkload, type WorkloadSpec } from './peers/report.ts';
import type { Cell, SystemRun, TierRun } from './peers/results.ts';
import { ensureDatabase, REDIS, redisClient } from './peers/services.ts';
import type { Environment, RecoverySettings, System, Tier, TierId } from './peers/types.ts';
import {
  BULK_CHUNK,
  DELAY_MS,
  drain,
  enqueueChunks,
  enqueueOneByOne,
  latency,
  makeTags,
  recovery,
  warmUp,
  type DrainResult,
} from './peers/workloads.ts';

// ---------------------------------------------------------------- settings

const QUICK = process.env['BENCH_QUICK'] === '1';
const size = (name: string, full: number, quick: number): number => Math.round(envNumber(name, QUICK ? quick : full));

const JOBS = size('BENCH_PEERS_JOBS', 10_000, 300);
const JOBS_C1 = size('BENCH_PEERS_JOBS_C1', 2_000, 100);
const SEQUENTIAL = size('BENCH_PEERS_SEQUENTIAL', 2_000, 100);
const IN_FLIGHT_JOBS = size('BENCH_PEERS_IN_FLIGHT_JOBS', 10_000, 300);
const IN_FLIGHT = 100;
const RATE = size('BENCH_PEERS_RATE', 200, 50);
const LATENCY_SECONDS = envNumber('BENCH_PEERS_LATENCY_SECONDS', QUICK ? 1 : 10);
const LATENCY_CONCURRENCY = 10;
const RETAINED = size('BENCH_PEERS_RETAINED', 1_000_000, 2_000);
const DELAYED = size('BENCH_PEERS_DELAYED', 100_000, 1_000);
const LOADED_CONCURRENCY = size('BENCH_PEERS_LOADED_CONCURRENCY', 100, 100);
const CAP_MS = envNumber('BENCH_PEERS_CAP_SECONDS', QUICK ? 1 : 30) * 1000;
const RECOVERY: RecoverySettings = {
  leaseSeconds: size('BENCH_PEERS_LEASE_SECONDS', 5, 1),
  checkSeconds: size('BENCH_PEERS_CHECK_SECONDS', 1, 1),
  immediateRetry: false,
};
/** Recovery waits at most this long for the job to come back (Telha's default backoff alone is 10 s). */
const RECOVERY_CAP_MS = (RECOVERY.leaseSeconds + 40) * 1000;
const CONCURRENCY = [1, 10, 100];
/** Jobs in each system's unmeasured warm-up pass, and in each fresh Telha server process's. */
const WARM_UP_JOBS = size('BENCH_PEERS_WARM_UP_JOBS', 10_000, 100);
/** Sequential echoes per transport path in the floor measurement. */
const FLOOR_ROUND_TRIPS = size('BENCH_PEERS_FLOOR_ROUND_TRIPS', 5_000, 200);

/** Systems per tier. The fsync tier leaves out pg-boss at its defaults: its polling caps it in the first tier already. */
const PLAN: Readonly<Record<TierId, readonly string[]>> = {
  process: Object.keys(FACTORIES),
  fsync: Object.keys(FACTORIES).filter((id) => id !== 'pg-boss'),
};
const ONLY = new Set((process.env['BENCH_PEERS_SYSTEMS'] ?? '').split(',').filter(Boolean));
const TIER_IDS = (process.env['BENCH_PEERS_TIERS'] ?? 'process,fsync').split(',').filter(Boolean) as TierId[];

// ---------------------------------------------------------------- the tables

const jobsPerSecond = (key: string, label: string) => ({ key, label, better: 'higher', digits: 0 }) as const;

const WORKLOADS: readonly WorkloadSpec[] = [
  {
    title: '1. enqueue, jobs/s',
    about: [
      `bulk: ${count(JOBS)} jobs in calls of ${fmt(BULK_CHUNK)} through each system's bulk API (Telha enqueueBatch, BullMQ addBulk, pg-boss insert, graphile-worker addJobs), best of the loads before the c=10 and c=100 drains`,
      `one at a time: ${count(SEQUENTIAL)} single-job calls awaited in sequence; in flight: ${count(IN_FLIGHT_JOBS)} single-job calls, ${IN_FLIGHT} outstanding (process tier only)`,
    ],
    columns: [
      jobsPerSecond('bulk', 'bulk'),
      jobsPerSecond('sequential', 'one at a time'),
      jobsPerSecond('inFlight', `${IN_FLIGHT} in flight`),
    ],
    checks: [],
  },
  {
    title: '2. drain of pre-enqueued no-op jobs, jobs/s',
    about: [
      `${count(JOBS)} jobs (${count(JOBS_C1)} at c=1), loaded in bulk, then N concurrent handlers start; clock: first handler start → last completion as the system reports it`,
      `(Telha: complete() acknowledged; BullMQ: worker "completed" event; pg-boss / graphile-worker: their job table shows no handled job still taken)`,
      `no prefetch: c=1 with the worker holding no job beyond its one slot (Telha prefetch: 0), so every next job waits for the last one's round trip; the peers fetch for free slots only, so theirs is their c=1`,
      `cap ${fmt(CAP_MS / 1000)} s per drain: a capped rate is over the jobs completed by then`,
    ],
    columns: [
      ...CONCURRENCY.map((c) => jobsPerSecond(`drain${c}`, `c=${c}`)),
      jobsPerSecond('drain1NoPrefetch', 'c=1, no prefetch'),
    ],
    checks: [...CONCURRENCY.map((c) => `drain-c${c}`), 'drain-c1-no-prefetch'],
  },
  {
    title: '3. enqueue → handler start latency, ms',
    about: [
      `${RATE} jobs/s enqueued one at a time for ${fmt(LATENCY_SECONDS)} s while ${LATENCY_CONCURRENCY} handlers wait idle; a job not started within ${fmt(CAP_MS / 1000)} s of the last send counts as infinitely late ("-")`,
    ],
    columns: [
      { key: 'p50', label: 'p50', better: 'lower', digits: 1 },
      { key: 'p99', label: 'p99', better: 'lower', digits: 1 },
      { key: 'max', label: 'max', better: 'lower', digits: 1 },
      { key: 'started', label: 'started', better: 'higher', digits: 0, ratio: false },
    ],
    checks: ['latency'],
  },
  {
    title: `4. drain at c=${LOADED_CONCURRENCY} with a loaded store, jobs/s`,
    about: [
      `retained: ${count(RETAINED)} completed jobs kept in the store (each system's own retention), then ${count(JOBS)} jobs drained; fill = seconds to load the completed rows`,
      `delayed: ${count(DELAYED)} jobs due in 1 h enqueued first (same queue / kind), then ${count(JOBS)} ready jobs drained; "vs empty" = ÷ the workload 2 drain at the same concurrency`,
      `skipped for a configuration whose workload 2 drain at c=${LOADED_CONCURRENCY} hit its cap (its numbers would only show the cap again)`,
    ],
    columns: [
      { key: 'retainedFill', label: 'fill s', better: 'lower', digits: 1, ratio: false },
      jobsPerSecond('retained', 'retained'),
      { key: 'retainedVsEmpty', label: 'vs empty', better: 'higher', digits: 2, ratio: false },
      jobsPerSecond('delayed', 'delayed ahead'),
      { key: 'delayedVsEmpty', label: 'vs empty', better: 'higher', digits: 2, ratio: false },
    ],
    checks: ['retained', 'delayed'],
  },
  {
    title: '5. recovery: SIGKILL of the worker holding a job → the job starts in another worker, seconds',
    about: [
      `lease / lock ${RECOVERY.leaseSeconds} s and abandoned-job check every ${RECOVERY.checkSeconds} s where configurable: Telha jobs.lease_ttl_secs + jobs.reaper_interval_secs,`,
      '  BullMQ lockDuration + stalledInterval, pg-boss expireInSeconds + maintenanceIntervalSeconds (12: superviseIntervalSeconds',
      '  and monitorIntervalSeconds); the worker is killed as soon as its handler starts',
      "defaults: retry backoff at each system's default (Telha waits jobs.backoff_base_secs = 10 s after reaping: a reaped lease is a failed attempt;",
      '  BullMQ moves a stalled job straight back to wait, pg-boss retries an expired job with retryDelay 0); no backoff: Telha with backoff_base_secs = 0',
    ],
    columns: [
      { key: 'recovery', label: 'defaults', better: 'lower', digits: 2 },
      { key: 'recoveryNoBackoff', label: 'no backoff', better: 'lower', digits: 2 },
    ],
    checks: ['recovery', 'recovery-no-backoff'],
  },
];

// ---------------------------------------------------------------- running

const runStarted = performance.now();

function log(message: string): void {
  const t = ((performance.now() - runStarted) / 1000).toFixed(0).padStart(5);
  process.stderr.write(`[${t} s] ${message}\n`);
}

function measured(value: number, note?: string): Cell {
  return note === undefined ? { value } : { value, note };
}

function because(text: string): Cell {
  return { value: NaN, text };
}

function drainCell(r: DrainResult, jobs: number): Cell {
  return measured(
    r.rate,
    r.capped ? `capped: ${fmt(r.completed)} of ${fmt(jobs)} jobs completed in ${fmt(r.seconds, 1)} s` : undefined,
  );
}

/** Run one measurement; a failure is recorded against the system and the run goes on. */
async function attempt(
  run: SystemRun,
  what: string,
  keys: readonly string[],
  work: () => Promise<void>,
): Promise<void> {
  try {
    await work();
  } catch (error) {
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    run.errors.push(`${what}: ${message.split('\n').slice(0, 3).join(' | ')}`);
    for (const key of keys) run.cells[key] ??= because('error');
    log(`${run.id}: ${what} FAILED: ${message.split('\n')[0] ?? ''}`);
  }
}

async function runSystem(system: System, tier: Tier, env: Environment): Promise<SystemRun> {
  const run: SystemRun = {
    id: system.id,
    label: system.label,
    isTelha: system.isTelha,
    settings: system.settings,
    fillMethod: system.fillMethod,
    cells: {},
    checks: [],
    errors: [],
    load: { start: os.loadavg()[0] ?? NaN, end: NaN },
  };
  const full = tier.id === 'process';
  // Quick mode skips the per-system pass (its numbers mean little anyway) to stay within about two minutes.
  if (!QUICK) {
    await attempt(run, 'warm-up', [], async () => {
      await warmUp(system, WARM_UP_JOBS, 5_000);
    });
  }
  const bulkRates: number[] = [];
  const drains = new Map<number, DrainResult>();

  if (full) {
    await attempt(run, 'enqueue one at a time', ['sequential', 'inFlight'], async () => {
      const r = await enqueueOneByOne(system, SEQUENTIAL, IN_FLIGHT_JOBS, IN_FLIGHT);
      run.cells['sequential'] = measured(r.sequential);
      run.cells['inFlight'] = measured(r.inFlight);
      log(`${system.id}: one at a time ${fmt(r.sequential)} jobs/s, ${IN_FLIGHT} in flight ${fmt(r.inFlight)} jobs/s`);
    });
  }

  for (const c of CONCURRENCY) {
    const jobs = c === 1 ? JOBS_C1 : JOBS;
    await attempt(run, `drain c=${c}`, [`drain${c}`], async () => {
      const r = await drain(system, { name: `drain-c${c}`, concurrency: c, jobs, capMs: CAP_MS });
      drains.set(c, r);
      if (c !== 1) bulkRates.push(r.enqueueRate);
      run.cells[`drain${c}`] = drainCell(r, jobs);
      run.checks.push(r.check);
      log(
        `${system.id}: drain c=${c}: ${fmt(r.completed)} jobs in ${fmt(r.seconds, 2)} s = ${fmt(r.rate)} jobs/s${r.capped ? ' (CAPPED)' : ''}; bulk load ${fmt(r.enqueueRate)} jobs/s`,
      );
    });
  }
  const c1 = run.cells['drain1'];
  if (system.notApplicable.noPrefetch !== undefined) {
    // Nothing to turn off: its c=1 drain is the same measurement, and Telha's is compared with it.
    const note = system.notApplicable.noPrefetch;
    run.cells['drain1NoPrefetch'] = c1 === undefined || Number.isNaN(c1.value) ? because(note) : { ...c1, note };
  } else {
    await attempt(run, 'drain c=1, no prefetch', ['drain1NoPrefetch'], async () => {
      const name = 'drain-c1-no-prefetch';
      const r = await drain(system, { name, concurrency: 1, jobs: JOBS_C1, capMs: CAP_MS, prefetch: false });
      run.cells['drain1NoPrefetch'] = drainCell(r, JOBS_C1);
      run.checks.push(r.check);
      log(
        `${system.id}: drain c=1, no prefetch: ${fmt(r.completed)} jobs in ${fmt(r.seconds, 2)} s = ${fmt(r.rate)} jobs/s`,
      );
    });
  }
  run.cells['bulk'] = bulkRates.length > 0 ? measured(Math.max(...bulkRates)) : because('error');

  if (!full) return run;

  await attempt(run, 'latency', ['p50', 'p99', 'max', 'started'], async () => {
    const r = await latency(system, {
      rate: RATE,
      seconds: LATENCY_SECONDS,
      concurrency: LATENCY_CONCURRENCY,
      capMs: CAP_MS,
    });
    run.cells['p50'] = measured(r.p50);
    run.cells['p99'] = measured(r.p99);
    run.cells['max'] = measured(r.max);
    run.cells['started'] = measured(
      r.started,
      r.started < r.sent ? `${fmt(r.sent - r.started)} of ${fmt(r.sent)} jobs not started within the cap` : undefined,
    );
    run.checks.push(r.check);
    log(
      `${system.id}: latency p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms, ${fmt(r.started)}/${fmt(r.sent)} started`,
    );
  });

  const empty = drains.get(LOADED_CONCURRENCY);
  const loadedKeys = ['retainedFill', 'retained', 'retainedVsEmpty', 'delayed', 'delayedVsEmpty'];
  if (empty === undefined || empty.capped) {
    const why = empty === undefined ? 'skipped: no empty drain' : `skipped: c=${LOADED_CONCURRENCY} drain capped`;
    // Said once, in the first number column; the rest of the row stays empty.
    for (const key of loadedKeys) run.cells[key] = because(key === 'retained' ? why : '');
  } else {
    if (system.notApplicable.retainedCompleted !== undefined) {
      run.cells['retainedFill'] = because('n/a');
      run.cells['retained'] = because(system.notApplicable.retainedCompleted);
      run.cells['retainedVsEmpty'] = because('');
    } else {
      await attempt(run, 'retained drain', ['retainedFill', 'retained', 'retainedVsEmpty'], async () => {
        let fillSeconds = NaN;
        const r = await drain(system, {
          name: 'retained',
          concurrency: LOADED_CONCURRENCY,
          jobs: JOBS,
          capMs: CAP_MS,
          prepare: async () => {
            const started = performance.now();
            let last = started;
            await system.fillCompleted(RETAINED, (done) => {
              if (performance.now() - last > 15_000) {
                last = performance.now();
                log(`${system.id}: .. ${fmt(done)} of ${fmt(RETAINED)} completed rows loaded`);
              }
            });
            fillSeconds = (performance.now() - started) / 1000;
            log(
              `${system.id}: ${fmt(RETAINED)} completed rows loaded in ${fmt(fillSeconds, 1)} s (${system.fillMethod})`,
            );
          },
        });
        run.cells['retainedFill'] = measured(fillSeconds);
        run.cells['retained'] = drainCell(r, JOBS);
        run.cells['retainedVsEmpty'] = measured(r.rate / empty.rate);
        run.checks.push(r.check);
        log(
          `${system.id}: drain with ${count(RETAINED)} retained: ${fmt(r.rate)} jobs/s (${fmt(r.rate / empty.rate, 2)}x empty)`,
        );
      });
    }
    await attempt(run, 'delayed drain', ['delayed', 'delayedVsEmpty'], async () => {
      const r = await drain(system, {
        name: 'delayed',
        concurrency: LOADED_CONCURRENCY,
        jobs: JOBS,
        capMs: CAP_MS,
        prepare: () => enqueueChunks(system, makeTags('future', DELAYED), DELAY_MS),
      });
      run.cells['delayed'] = drainCell(r, JOBS);
      run.cells['delayedVsEmpty'] = measured(r.rate / empty.rate);
      run.checks.push(r.check);
      log(
        `${system.id}: drain with ${count(DELAYED)} delayed ahead: ${fmt(r.rate)} jobs/s (${fmt(r.rate / empty.rate, 2)}x empty)`,
      );
    });
  }

  if (system.notApplicable.recovery !== undefined) {
    run.cells['recovery'] = because(system.notApplicable.recovery);
    run.cells['recoveryNoBackoff'] = because(system.notApplicable.recovery);
  } else {
    // Quick mode skips Telha's default 10 s backoff run: it only adds the known 10 s.
    const variants = system.isTelha ? (QUICK ? [true] : [false, true]) : [false];
    for (const immediateRetry of variants) {
      const key = immediateRetry ? 'recoveryNoBackoff' : 'recovery';
      await attempt(run, `recovery${immediateRetry ? ' (no backoff)' : ''}`, [key], async () => {
        const r = await recovery(system, tier, env, { ...RECOVERY, immediateRetry }, RECOVERY_CAP_MS);
        run.cells[key] = measured(r.seconds);
        run.checks.push({ ...r.check, measurement: immediateRetry ? 'recovery-no-backoff' : 'recovery' });
        log(`${system.id}: recovery${immediateRetry ? ' without backoff' : ''} ${fmt(r.seconds, 2)} s`);
      });
    }
    if (!system.isTelha) {
      // The peers already retry at once by default: the same measurement answers both columns.
      const same = run.cells['recovery'];
      if (same)
        run.cells['recoveryNoBackoff'] = { ...same, note: 'retries at once by default: same run as "defaults"' };
    } else if (QUICK) {
      run.cells['recovery'] = because('skipped (quick)');
    }
  }
  return run;
}

async function main(): Promise<void> {
  const tmpRoot = await mkdtemp(path.join(os.tmpdir(), 'telha-bench-peers-'));
  const env: Environment = { redis: REDIS, tmpRoot, warmUpJobs: WARM_UP_JOBS };
  const redis = redisClient();
  const persistence = new RedisPersistence(redis, log);
  // Ctrl-C or a kill must not leave Redis writing an AOF: restore first, then exit.
  let restoring: Promise<void> | null = null;
  const restore = (): Promise<void> => (restoring ??= persistence.restore());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: restoring Redis persistence and exiting`);
      void restore().finally(() => {
        rmSync(tmpRoot, { recursive: true, force: true });
        process.exit(130);
      });
    });
  }
  const tiers: TierRun[] = [];
  let description: Description | null = null;
  let floor: FloorPath[] = [];
  try {
    await persistence.acquire();
    await ensureDatabase();
    description = await describe(redis, tmpRoot, RELEASES);
    log(`bench:peers ${QUICK ? '(QUICK: tiny sizes, smoke test only) ' : ''}temp dir ${tmpRoot}`);
    floor = await measureFloor(FLOOR_ROUND_TRIPS);
    log(`floor: ${floor.map((path) => `${path.label} ${fmt(path.rate)}/s`).join(', ')}`);
    for (const tierId of TIER_IDS) {
      const tier = TIERS[tierId];
      const tierStarted = performance.now();
      log(`tier ${tier.title}`);
      await persistence.apply(tier);
      const systems: SystemRun[] = [];
      for (const id of PLAN[tierId].filter((id) => ONLY.size === 0 || ONLY.has(id))) {
        const started = performance.now();
        log(`${id}: start`);
        const run = await runSystem(factory(id).create(tier, env), tier, env);
        run.load.end = os.loadavg()[0] ?? NaN;
        systems.push(run);
        log(`${id}: done in ${fmt((performance.now() - started) / 1000)} s`);
      }
      tiers.push({ tier, systems, seconds: (performance.now() - tierStarted) / 1000 });
    }
  } finally {
    await restore();
    redis.disconnect();
    await rm(tmpRoot, { recursive: true, force: true });
  }
  if (description === null) return;
  printReport(description, tiers, floor);
  const jsonPath = process.env['BENCH_PEERS_JSON'];
  if (jsonPath) {
    await writeFile(jsonPath, JSON.stringify({ ...(jsonReport(description, tiers) as object), floor }, null, 2));
    log(`results written to ${jsonPath}`);
  }
}

function settingsSummary(): Record<string, string | number> {
  return {
    quick: QUICK ? 'yes' : 'no',
    jobs: JOBS,
    jobsAtC1: JOBS_C1,
    sequential: SEQUENTIAL,
    inFlightJobs: IN_FLIGHT_JOBS,
    inFlight: IN_FLIGHT,
    latencyRate: RATE,
    latencySeconds: LATENCY_SECONDS,
    latencyConcurrency: LATENCY_CONCURRENCY,
    retained: RETAINED,
    delayed: DELAYED,
    loadedConcurrency: LOADED_CONCURRENCY,
    capSeconds: CAP_MS / 1000,
    leaseSeconds: RECOVERY.leaseSeconds,
    checkSeconds: RECOVERY.checkSeconds,
    bulkChunk: BULK_CHUNK,
    warmUpJobs: WARM_UP_JOBS,
    floorRoundTrips: FLOOR_ROUND_TRIPS,
  };
}

/**
 * The floor's table, then each Telha server configuration's one-at-a-time enqueue as a share of the
 * grpc-js bidi echo (an awaited enqueue is one message each way on a Produce stream, plus the queue's work).
 */
function renderFloor(floor: readonly FloorPath[], tiers: readonly TierRun[]): string {
  const out = [
    `== the transport's floor: ${count(FLOOR_ROUND_TRIPS)} sequential 64-byte round trips to another process on loopback`,
    formatTable(
      ['path', 'round trips/s', 'p50 µs'],
      floor.map((path) => [path.label, fmt(path.rate), fmt(path.p50Micros)]),
    ),
  ];
  const bidi = floor.find((path) => path.id === 'grpcBidi');
  if (bidi === undefined) return out.join('\n');
  const rows = tiers.flatMap((t) =>
    t.systems
      .filter((s) => s.isTelha && s.id.startsWith('telha-server'))
      .map((s) => {
        const sequential = s.cells['sequential']?.value ?? NaN;
        return [`${s.label}, ${t.tier.id} tier`, fmt(sequential), fmt(sequential / bidi.rate, 2)];
      }),
  );
  if (rows.length > 0) {
    out.push(
      '',
      '   awaited single enqueue through the server ÷ the grpc-js bidi echo (target: at least 0.6)',
      formatTable(['system', 'one at a time/s', '÷ bidi echo'], rows),
    );
  }
  return out.join('\n');
}

function printReport(description: Description, tiers: readonly TierRun[], floor: readonly FloorPath[]): void {
  const out: string[] = [];
  const peers = [`BullMQ ${description.versions['bullmq'] ?? '?'}`]
    .concat(Object.entries(RELEASES).map(([name, release]) => `${name} ${release.version}`))
    .join(', ');
  out.push(
    `Telha vs peers on Node ${process.version} (${peers})${QUICK ? ' (BENCH_QUICK=1: tiny sizes, a smoke test; the numbers mean little)' : ''}`,
  );
  for (const [title, group] of [
    ['machine', description.machine],
    ['versions', description.versions],
    ['servers', description.servers],
    ['sizes', settingsSummary()],
  ] as const) {
    out.push(`  ${title}:`);
    for (const [k, v] of Object.entries(group)) out.push(`    ${k}: ${v}`);
  }
  out.push(
    '  Every system runs in its own turn on the same 2-core box as the load generator; Redis and PostgreSQL are',
    "  separate server processes, Telha's server a child process, Telha embedded runs inside the load generator.",
    '  Durability tiers are never compared with each other.',
  );
  if (floor.length > 0) out.push('', renderFloor(floor, tiers));
  for (const spec of WORKLOADS) out.push('', renderWorkload(spec, tiers));
  out.push('', renderViolations(tiers), '', renderSettings(tiers));
  const fills = tiers.flatMap((t) => t.systems).filter((s) => s.cells['retainedFill']?.text === undefined);
  if (fills.length > 0) {
    out.push('', '== how each system loaded its retained completed rows (workload 4)');
    for (const s of new Map(fills.map((f) => [f.id, f])).values()) out.push(`   ${s.label}: ${s.fillMethod}`);
  }
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
  out.push('', `total wall time: ${fmt((performance.now() - runStarted) / 1000)} s; load average at end: ${load}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

function jsonReport(description: Description, tiers: readonly TierRun[]): unknown {
  const number = (n: number): number | null => (Number.isFinite(n) ? n : null);
  return {
    ...description,
    sizes: settingsSummary(),
    tiers: tiers.map((t) => ({
      tier: t.tier.id,
      title: t.tier.title,
      seconds: t.seconds,
      systems: t.systems.map((s) => ({
        ...s,
        cells: Object.fromEntries(Object.entries(s.cells).map(([k, c]) => [k, { ...c, value: number(c.value) }])),
      })),
    })),
  };
}

try {
  await main();
} catch (error) {
  log(`bench:peers failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
}
// Everything was closed; if a peer library still holds the event loop open, say so and leave anyway.
setTimeout(() => {
  log('a handle is still open 10 s after the report (a peer library that did not close everything): exiting');
  process.exit(0);
}, 10_000).unref();
