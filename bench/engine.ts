/**
 * Engine benchmark: prints numbers, never asserts on them.
 *
 *  1. lease_next latency with 0 / 100k / 1M Completed rows in the store
 *  2. lease_next latency with 0 / 100k backoff-gated Pending rows ahead of the first eligible job
 *  3. lease_next latency after 200k jobs passed through the Pending range (tombstones), vs a fresh store
 *  4. one reaper pass over 1,000 expired leases with 0 / 1M Completed rows
 *  5. full cycles (enqueue → lease → complete) per second at 1 / 10 / 100 concurrent workers,
 *     beside the raw rate of RocksDB write batches of the same shape
 *  6. the same cycles with `storage.durability = 'fsync'`, at 1 and 100 workers
 *
 * Run: npm run bench
 *
 * Environment:
 *  BENCH_SCALE=0.1        multiply every background row count (default 1: the issue's numbers)
 *  BENCH_LEASES=2000      leases timed per latency point
 *  BENCH_EXPIRED=1000     expired leases per reaper pass
 *  BENCH_REAP_REPEATS=3   reaper passes per point (the median is printed)
 *  BENCH_SECONDS=3        measured seconds per throughput run (raw baselines take 2/3 of it)
 *  BENCH_SECTIONS=1,2,3,4,5,6   which sections to run (4 needs 1's store and runs with it)
 *  BENCH_BACKEND=postgres the same sections on the PostgreSQL backend (a schema per store in
 *                         BENCH_PG_URL, default the local `test` database; dropped at the end).
 *                         BENCH_SCALE defaults to 0.1 there: the background rows are written
 *                         through the queue, and a million of them takes PostgreSQL minutes.
 *                         Section 5 has no raw baseline on PostgreSQL.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { encodeJobKey } from '../src/codec/keys.ts';
import { encodeRecord } from '../src/codec/value.ts';
import { makeConfig } from '../src/core/config.ts';
import { ANY_SCOPE, JobState, tenantScope, type JobRecord, type Micros, type QueueScope } from '../src/core/types.ts';
import { openQueue } from '../src/open.ts';
import { OffsetClock } from '../src/core/clock.ts';
import type { Queue } from '../src/engine/queue.ts';
import type { NewJob } from '../src/core/types.ts';
import { RocksDatabase, type WriteOp } from '../src/storage/rocksdb/database.ts';
import { count, envNumber, fmt, percentile, sleep } from './support.ts';

// ---------------------------------------------------------------- settings

const BACKEND = process.env['BENCH_BACKEND'] ?? 'rocksdb';
if (BACKEND !== 'rocksdb' && BACKEND !== 'postgres') throw new Error(`BENCH_BACKEND must be rocksdb or postgres`);
const ON_POSTGRES = BACKEND === 'postgres';
const PG_URL = process.env['BENCH_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const SCALE = envNumber('BENCH_SCALE', ON_POSTGRES ? 0.1 : 1);
const scaled = (n: number): number => Math.round(n * SCALE);
const LEASES = Math.max(10, Math.round(envNumber('BENCH_LEASES', 2_000)));
const EXPIRED = Math.max(1, Math.round(envNumber('BENCH_EXPIRED', 1_000)));
const REAP_REPEATS = Math.max(1, Math.round(envNumber('BENCH_REAP_REPEATS', 3)));
const SECONDS = envNumber('BENCH_SECONDS', 3);
const RAW_SECONDS = Math.max(0.2, (SECONDS * 2) / 3);
const SECTIONS = new Set((process.env['BENCH_SECTIONS'] ?? '1,2,3,4,5,6').split(',').map((s) => s.trim()));

const COMPLETED_POINTS = [0, scaled(100_000), scaled(1_000_000)];
const GATED_POINTS = [0, scaled(100_000)];
const TOMBSTONE_JOBS = scaled(200_000);
const CONCURRENCY = [1, 10, 100];
const FSYNC_CONCURRENCY = [1, 100];

const SCOPE = tenantScope('bench');
const REAP_SCOPE = tenantScope('bench-reaper');
const WORK_KIND = 'work';
const BACKGROUND_KIND = 'bg';
const PAYLOAD = Buffer.alloc(32, 0x61);
const ENQUEUE_BATCH = 10_000;
const LEASE_BATCH = 1_000;
const FAR_FUTURE_SECS = 2 * 3600;
/** Real time, moved ahead by the reaper measurement so the leases it made have expired. */
const clock = new OffsetClock();
const SETTLE_MS = 1_000;

// ---------------------------------------------------------------- output helpers

const out = (line = ''): void => {
  process.stdout.write(`${line}\n`);
};

function ratio(a: number, b: number): string {
  return b > 0 ? `${fmt(a / b, 2)}x` : '-';
}

/** An aligned table: the first column left-aligned, the others right-aligned. */
function table(headers: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  out(`  ${line(headers)}`);
  out(`  ${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const row of rows) out(`  ${line(row)}`);
}

function section(title: string): void {
  out();
  out(`== ${title}`);
}

interface Summary {
  readonly median: number;
  readonly p99: number;
  readonly mean: number;
  readonly max: number;
}

function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((s, v) => s + v, 0) / Math.max(1, sorted.length);
  return {
    median: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    mean,
    max: sorted[sorted.length - 1] ?? NaN,
  };
}

function verdict(worst: number, empty: number): string {
  if (!(empty > 0)) return '';
  return worst / empty <= 2 ? 'within 2x' : 'OVER 2x';
}

function seconds(ms: number): string {
  return `${fmt(ms / 1000, 1)} s`;
}

/** Collect garbage between phases when the run was started with --expose-gc. */
function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) gc();
}

// ---------------------------------------------------------------- stores

let root = '';
let dirCounter = 0;

async function newDir(name: string): Promise<string> {
  const dir = path.join(root, `${String(++dirCounter).padStart(2, '0')}-${name}`);
  await mkdir(dir);
  return dir;
}

/** PostgreSQL schemas this run created, dropped at the end. */
const pgSchemas = new Set<string>();

/** A store's PostgreSQL schema, named after its directory (which stays empty on that backend). */
function pgSchemaOf(dir: string): string {
  return `telha_bench_${process.pid}_${path.basename(dir).replace(/[^a-z0-9]/g, '_')}`;
}

function open(dir: string, durability: 'process' | 'fsync' = 'process'): Promise<Queue> {
  const storage = ON_POSTGRES
    ? { kind: 'postgres' as const, url: PG_URL, schema: pgSchemaOf(dir), durability }
    : { path: dir, durability };
  if (ON_POSTGRES) pgSchemas.add(storage.schema as string);
  return openQueue({ config: makeConfig({ storage, retention: { enabled: false } }), clock, services: false });
}

async function dropPgSchemas(): Promise<void> {
  if (pgSchemas.size === 0) return;
  const db = new pg.Client({ connectionString: PG_URL });
  await db.connect();
  try {
    for (const schema of pgSchemas) await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await db.end();
  }
}

async function freshQueue(
  name: string,
  durability: 'process' | 'fsync' = 'process',
): Promise<{ queue: Queue; dir: string }> {
  const dir = await newDir(name);
  return { queue: await open(dir, durability), dir };
}

/** The group committer's counters; `Queue.stats()` is typed as the generic StoreStats. */
interface CommitStats {
  readonly batches: number;
  readonly units: number;
  readonly pending: number;
  readonly leased: number;
}

function commitStats(queue: Queue): CommitStats {
  const s = queue.stats() as Partial<CommitStats>;
  return { batches: s.batches ?? 0, units: s.units ?? 0, pending: s.pending ?? 0, leased: s.leased ?? 0 };
}

async function completedRows(queue: Queue): Promise<number> {
  const rows = await queue.counts(ANY_SCOPE);
  return rows.filter((r) => r.state === JobState.Completed).reduce((s, r) => s + r.count, 0);
}

const jobs = (n: number, extra: Partial<NewJob> = {}): NewJob[] =>
  Array.from({ length: n }, () => ({ kind: WORK_KIND, payload: PAYLOAD, ...extra }));

async function enqueueMany(queue: Queue, scope: QueueScope, n: number, extra: Partial<NewJob> = {}): Promise<void> {
  for (let done = 0; done < n; done += ENQUEUE_BATCH) {
    await queue.enqueueBatch(jobs(Math.min(ENQUEUE_BATCH, n - done), extra), scope);
  }
}

/**
 * Push `n` jobs of `kind` through Pending → Leased → Completed through the
 * public API, 10,000 at a time: one batch enqueue, ten 1,000-job lease
 * batches, then every completion at once (the group committer coalesces them).
 */
async function passThrough(queue: Queue, scope: QueueScope, n: number, kind = BACKGROUND_KIND): Promise<void> {
  const workerId = 'bench-filler';
  for (let done = 0; done < n;) {
    const size = Math.min(ENQUEUE_BATCH, n - done);
    await queue.enqueueBatch(jobs(size, { kind }), scope);
    const leased: JobRecord[] = [];
    while (leased.length < size) {
      const batch = await queue.lease({
        workerId,
        kinds: [kind],
        scope,
        limit: Math.min(LEASE_BATCH, size - leased.length),
      });
      if (batch.length === 0) throw new Error(`passThrough: only ${leased.length} of ${size} jobs could be leased`);
      leased.push(...batch);
    }
    await Promise.all(
      leased.map((job) => queue.complete(job.jobId, { workerId, leaseGeneration: job.leaseGeneration })),
    );
    done += size;
  }
}

async function timedPassThrough(queue: Queue, scope: QueueScope, n: number, what: string): Promise<void> {
  if (n <= 0) return;
  const started = performance.now();
  await passThrough(queue, scope, n);
  const ms = performance.now() - started;
  out(`  .. ${what}: ${fmt(n)} jobs enqueued/leased/completed in ${seconds(ms)} (${fmt(n / (ms / 1000))} jobs/s)`);
}

// ---------------------------------------------------------------- measurements

interface LeasePoint {
  readonly lease: Summary;
  readonly complete: Summary;
}

/** Lease samples of one store, collected a chunk at a time. */
class LeaseSamples {
  readonly lease: number[] = [];
  readonly complete: number[] = [];

  summary(): LeasePoint {
    return { lease: summarize(this.lease), complete: summarize(this.complete) };
  }
}

/**
 * Time `n` `leaseNext` calls on the scope one at a time, each followed by a
 * timed `complete`, so every lease finds a queue of the same shape.
 */
async function leaseChunk(queue: Queue, n: number, into: LeaseSamples): Promise<void> {
  const workerId = 'bench-measured';
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const job = await queue.leaseNext({ workerId, scope: SCOPE });
    const t1 = performance.now();
    if (job === null) throw new Error(`leaseNext found nothing after ${into.lease.length} leases`);
    if (job.kind !== WORK_KIND) throw new Error(`leaseNext returned a ${job.kind} job, not a ${WORK_KIND} job`);
    await queue.complete(job.jobId, { workerId, leaseGeneration: job.leaseGeneration });
    const t2 = performance.now();
    into.lease.push((t1 - t0) * 1000);
    into.complete.push((t2 - t1) * 1000);
  }
}

/** `LEASES` timed leases on one store (after enqueueing that many eligible jobs behind whatever it holds). */
async function measureLeases(queue: Queue, n = LEASES): Promise<LeasePoint> {
  await enqueueMany(queue, SCOPE, n);
  collectGarbage();
  const samples = new LeaseSamples();
  await leaseChunk(queue, n, samples);
  return samples.summary();
}

interface PairedPoint {
  /** The store under test. */
  readonly loaded: LeasePoint;
  /** A fresh, empty store timed in alternating chunks with it, so machine noise hits both alike. */
  readonly fresh: LeasePoint;
}

const CHUNK = 250;

/**
 * `LEASES` timed leases on the store under test and as many on a fresh store
 * opened for the purpose, alternating in chunks of 250 (and alternating which
 * goes first), so both see the same JIT state, GC pressure and neighbours.
 */
async function measurePaired(queue: Queue, name: string): Promise<PairedPoint> {
  const reference = await freshQueue(`reference-${name}`);
  try {
    await enqueueMany(queue, SCOPE, LEASES);
    await enqueueMany(reference.queue, SCOPE, LEASES);
    await settle();
    const loaded = new LeaseSamples();
    const fresh = new LeaseSamples();
    for (let done = 0, round = 0; done < LEASES; done += CHUNK, round++) {
      const n = Math.min(CHUNK, LEASES - done);
      if (round % 2 === 0) {
        await leaseChunk(queue, n, loaded);
        await leaseChunk(reference.queue, n, fresh);
      } else {
        await leaseChunk(reference.queue, n, fresh);
        await leaseChunk(queue, n, loaded);
      }
    }
    return { loaded: loaded.summary(), fresh: fresh.summary() };
  } finally {
    await reference.queue.close();
  }
}

const LEASE_HEADERS = [
  'case',
  'lease med µs',
  'lease p99 µs',
  'lease max µs',
  'complete med µs',
  'fresh med',
  'fresh p99',
  'med÷fresh',
  'p99÷fresh',
];

function leaseRow(label: string, p: PairedPoint): string[] {
  return [
    label,
    fmt(p.loaded.lease.median, 1),
    fmt(p.loaded.lease.p99, 1),
    fmt(p.loaded.lease.max, 0),
    fmt(p.loaded.complete.median, 1),
    fmt(p.fresh.lease.median, 1),
    fmt(p.fresh.lease.p99, 1),
    ratio(p.loaded.lease.median, p.fresh.lease.median),
    ratio(p.loaded.lease.p99, p.fresh.lease.p99),
  ];
}

const LEASE_LEGEND =
  '  fresh med/p99: lease µs of a fresh store timed in alternating 250-lease chunks with the case; ' +
  'open#1/#2: close, then two timed reopens (#1 also replays the WAL; both rebuild the live index)';

const OPEN_HEADERS = ['open#1 ms', 'open#2 ms'];

function openCells([first, second]: [number, number]): string[] {
  return [fmt(first, 1), fmt(second, 1)];
}

/**
 * The issue's "worst case / empty case" ratio, two ways: against the fresh store
 * timed in alternating chunks with the worst case (robust to drift), and
 * against the empty case's own row (measured minutes earlier).
 */
function printLeaseRatio(worstLabel: string, worst: PairedPoint, empty: PairedPoint): void {
  const line = (what: string, w: LeasePoint, e: LeasePoint): void =>
    out(
      `  ${worstLabel} / ${what}: median ${ratio(w.lease.median, e.lease.median)} (${verdict(w.lease.median, e.lease.median)}), ` +
        `p99 ${ratio(w.lease.p99, e.lease.p99)} (${verdict(w.lease.p99, e.lease.p99)})`,
    );
  line('fresh store timed alongside', worst.loaded, worst.fresh);
  line('empty-case row', worst.loaded, empty.loaded);
  out('  [target: within 2x]');
}

/**
 * Close the store and open it twice, timing each open (which rebuilds the live
 * index by scanning every scope's Pending and Leased key ranges). The first
 * open also replays the WAL written since the last memtable flush.
 */
async function reopen(queue: Queue, dir: string): Promise<{ queue: Queue; firstMs: number; secondMs: number }> {
  await queue.close();
  collectGarbage();
  let started = performance.now();
  const first = await open(dir);
  const firstMs = performance.now() - started;
  await first.close();
  started = performance.now();
  const second = await open(dir);
  return { queue: second, firstMs, secondMs: performance.now() - started };
}

/** Let background flushes and compactions of the previous phase settle before timing. */
async function settle(): Promise<void> {
  collectGarbage();
  await sleep(SETTLE_MS);
}

interface ReapPoint {
  readonly ms: number[];
  readonly reaped: number;
}

/**
 * `REAP_REPEATS` times: lease `EXPIRED` fresh jobs in a scope of their own and
 * leave them, then time `reapExpiredAt` far enough ahead that every lease has
 * expired. Reaped jobs go back to Pending behind a backoff gate past that
 * time, so the next repeat does not lease them again.
 */
async function measureReap(queue: Queue): Promise<ReapPoint> {
  const ms: number[] = [];
  let reaped = 0;
  for (let r = 0; r < REAP_REPEATS; r++) {
    await enqueueMany(queue, REAP_SCOPE, EXPIRED);
    let leased = 0;
    while (leased < EXPIRED) {
      const batch = await queue.lease({
        workerId: 'bench-doomed',
        scope: REAP_SCOPE,
        limit: Math.min(LEASE_BATCH, EXPIRED - leased),
      });
      if (batch.length === 0) throw new Error('measureReap: nothing to lease');
      leased += batch.length;
    }
    collectGarbage();
    clock.advance(FAR_FUTURE_SECS * 1_000_000);
    const started = performance.now();
    const result = await queue.maintenance.reapExpired();
    ms.push(performance.now() - started);
    reaped = result.reaped;
    if (result.reaped !== EXPIRED) throw new Error(`reaper pass reaped ${result.reaped}, expected ${EXPIRED}`);
  }
  return { ms, reaped };
}

function reapRow(label: string, p: ReapPoint): string[] {
  const sorted = [...p.ms].sort((a, b) => a - b);
  const median = percentile(sorted, 0.5);
  return [
    label,
    fmt(p.reaped),
    fmt(median, 1),
    fmt(sorted[0] ?? NaN, 1),
    fmt(sorted[sorted.length - 1] ?? NaN, 1),
    fmt((median * 1000) / p.reaped, 1),
  ];
}

function reapMedian(p: ReapPoint): number {
  return percentile(
    [...p.ms].sort((a, b) => a - b),
    0.5,
  );
}

interface CyclePoint {
  readonly cycles: number;
  readonly ms: number;
  readonly perSecond: number;
  readonly batches: number;
  readonly units: number;
  readonly misses: number;
}

/**
 * `workers` async loops of enqueue → leaseNext → complete on one scope for
 * `durationS` seconds (after a short warm-up), counting finished cycles.
 */
async function measureCycles(queue: Queue, workers: number, durationS: number, warmupS: number): Promise<CyclePoint> {
  let measuring = false;
  let stop = false;
  let cycles = 0;
  let misses = 0;
  const worker = async (w: number): Promise<void> => {
    const workerId = `bench-worker-${w}`;
    while (!stop) {
      await queue.enqueue({ kind: WORK_KIND, payload: PAYLOAD }, SCOPE);
      const job = await queue.leaseNext({ workerId, scope: SCOPE });
      if (job === null) {
        misses++;
        continue;
      }
      await queue.complete(job.jobId, { workerId, leaseGeneration: job.leaseGeneration });
      if (measuring) cycles++;
    }
  };
  const running = Array.from({ length: workers }, (_, w) => worker(w));
  await sleep(warmupS * 1000);
  collectGarbage();
  const before = commitStats(queue);
  measuring = true;
  cycles = 0;
  const started = performance.now();
  await sleep(durationS * 1000);
  measuring = false;
  const ms = performance.now() - started;
  const after = commitStats(queue);
  const measured = cycles;
  stop = true;
  await Promise.all(running);
  return {
    cycles: measured,
    ms,
    perSecond: measured / (ms / 1000),
    batches: after.batches - before.batches,
    units: after.units - before.units,
    misses,
  };
}

interface RawPoint {
  readonly writes: number;
  readonly perSecond: number;
}

/**
 * One transition's writes, as the engine stages them for a single job, cycling
 * through the three transitions of a cycle so the raw batches have the same
 * shape as the queue's: enqueue (row + id index + counter), lease (delete the
 * Pending row, put the Leased row, id index, two counters), complete (delete,
 * put the Completed row, id index, finished index, two counters). Row sizes are
 * the ones section 5 prints (293 / 391 / 433 B).
 */
function rawBatch(db: RocksDatabase, seq: number): WriteOp[] {
  const cycle = Math.floor(seq / 3);
  const jobId = Buffer.alloc(16);
  jobId.writeUInt32BE(cycle >>> 0, 12);
  jobId.writeUInt32BE(Math.floor(cycle / 0x1_0000_0000), 8);
  const key = (state: JobState): Buffer =>
    encodeJobKey({ scope: RAW_SCOPE, state, priority: 128, createdAt: RAW_EPOCH + cycle, jobId });
  const counter = (state: JobState): WriteOp => ({
    column: db.column('counts'),
    key: Buffer.from([state]),
    value: RAW_COUNT,
  });
  const jobs = db.column('jobs');
  const ids = db.column('ids');
  switch (seq % 3) {
    case 0:
      return [
        { column: jobs, key: key(JobState.Pending), value: RAW_VALUES.pending },
        { column: ids, key: jobId, value: key(JobState.Pending) },
        counter(JobState.Pending),
      ];
    case 1:
      return [
        { column: jobs, key: key(JobState.Pending), value: null },
        { column: jobs, key: key(JobState.Leased), value: RAW_VALUES.leased },
        { column: ids, key: jobId, value: key(JobState.Leased) },
        counter(JobState.Pending),
        counter(JobState.Leased),
      ];
    default:
      return [
        { column: jobs, key: key(JobState.Leased), value: null },
        { column: jobs, key: key(JobState.Completed), value: RAW_VALUES.completed },
        { column: ids, key: jobId, value: key(JobState.Completed) },
        {
          column: db.column('finished'),
          key: Buffer.concat([Buffer.from([JobState.Completed]), jobId]),
          value: key(JobState.Completed),
        },
        counter(JobState.Leased),
        counter(JobState.Completed),
      ];
  }
}

const RAW_SCOPE = Buffer.alloc(32, 0x42);
const RAW_EPOCH: Micros = Date.UTC(2026, 0, 1) * 1000;
const RAW_VALUES = {
  pending: Buffer.alloc(293, 0x5a),
  leased: Buffer.alloc(391, 0x5a),
  completed: Buffer.alloc(433, 0x5a),
};
const RAW_COUNT = Buffer.alloc(8, 1);

/**
 * Transition-shaped write batches back to back for `durationS` seconds. The
 * binding writes synchronously, so this is the most batches one thread can
 * write: the ceiling a queue that writes one batch per transition could reach.
 */
function measureRaw(db: RocksDatabase, sync: boolean, durationS: number): RawPoint {
  let seq = rawSeq;
  let writes = 0;
  const started = performance.now();
  const deadline = started + durationS * 1000;
  while (performance.now() < deadline) {
    for (let i = 0; i < 30; i++) {
      db.write(rawBatch(db, seq++), sync);
      writes++;
    }
  }
  const ms = performance.now() - started;
  rawSeq = seq;
  return { writes, perSecond: writes / (ms / 1000) };
}

let rawSeq = 0;

const CYCLE_HEADERS = ['case', 'cycles/s', 'µs/cycle', 'cycles', 'batches', 'units', 'units/batch', 'batches/cycle'];

function cycleRow(label: string, p: CyclePoint): string[] {
  return [
    label,
    fmt(p.perSecond),
    fmt(1e6 / p.perSecond, 1),
    fmt(p.cycles),
    fmt(p.batches),
    fmt(p.units),
    fmt(p.batches > 0 ? p.units / p.batches : NaN, 1),
    fmt(p.cycles > 0 ? p.batches / p.cycles : NaN, 2),
  ];
}

// ---------------------------------------------------------------- sections

async function warmUp(): Promise<void> {
  const started = performance.now();
  const { queue } = await freshQueue('warmup');
  try {
    await passThrough(queue, SCOPE, 20_000);
    await measureLeases(queue, Math.min(LEASES, 2_000));
    await measureCycles(queue, 10, 0.5, 0.1);
  } finally {
    await queue.close();
  }
  out(`warm-up (JIT, separate store): ${seconds(performance.now() - started)}`);
}

/** Sections 1 and 4 share one store, grown from 0 to 1M Completed rows. */
async function completedRowsAndReaper(): Promise<void> {
  const doLeases = SECTIONS.has('1');
  const doReap = SECTIONS.has('4');
  if (!doLeases && !doReap) return;
  section(
    `1/4. store with 0 / ${COMPLETED_POINTS.slice(1).map(count).join(' / ')} Completed rows (same scope, kind "${BACKGROUND_KIND}")`,
  );
  out(
    `  ${fmt(LEASES)} leases per point, each followed by a complete; reaper: ${fmt(EXPIRED)} expired leases, median of ${REAP_REPEATS} passes`,
  );
  const opened = await freshQueue('completed');
  const dir = opened.dir;
  let queue = opened.queue;
  const leaseRows: { label: string; point: PairedPoint; rows: number; openMs: [number, number] }[] = [];
  const reapRows: { label: string; point: ReapPoint; rows: number }[] = [];
  let built = 0;
  try {
    for (const target of COMPLETED_POINTS) {
      await timedPassThrough(queue, SCOPE, target - built, `building to ${count(target)} Completed rows`);
      built = target;
      const label = `${count(target)} completed`;
      if (doLeases) {
        const rows = await completedRows(queue);
        const point = await measurePaired(queue, `completed-${target}`);
        const reopened = await reopen(queue, dir);
        queue = reopened.queue;
        leaseRows.push({ label, point, rows, openMs: [reopened.firstMs, reopened.secondMs] });
      }
      if (doReap) {
        const rows = await completedRows(queue);
        if (!doLeases) await settle();
        reapRows.push({ label, point: await measureReap(queue), rows });
      }
    }
  } finally {
    await queue.close();
  }
  if (doLeases) {
    out();
    out('  1. lease_next latency vs Completed rows');
    out(LEASE_LEGEND);
    table(
      [...LEASE_HEADERS, 'completed rows', ...OPEN_HEADERS],
      leaseRows.map((r) => [...leaseRow(r.label, r.point), fmt(r.rows), ...openCells(r.openMs)]),
    );
    const empty = leaseRows[0];
    const worst = leaseRows[leaseRows.length - 1];
    if (empty && worst && worst !== empty) printLeaseRatio(`worst (${worst.label})`, worst.point, empty.point);
  }
  if (doReap) {
    out();
    out(`  4. reapExpiredAt pass over ${fmt(EXPIRED)} expired leases vs Completed rows`);
    table(
      ['case', 'reaped', 'pass med ms', 'min ms', 'max ms', 'µs/lease', 'completed rows'],
      reapRows.map((r) => [...reapRow(r.label, r.point), fmt(r.rows)]),
    );
    const empty = reapRows[0];
    const worst = reapRows[reapRows.length - 1];
    if (empty && worst && worst !== empty) {
      const w = reapMedian(worst.point);
      const e = reapMedian(empty.point);
      out(`  worst (${worst.label}) / empty: ${ratio(w, e)} (${verdict(w, e)})  [target: within 2x]`);
    }
  }
}

async function gatedRows(): Promise<void> {
  if (!SECTIONS.has('2')) return;
  section(
    `2. lease_next with 0 / ${GATED_POINTS.slice(1).map(count).join(' / ')} backoff-gated Pending rows ahead (same scope and kind, notBefore = now + 1 h)`,
  );
  const rows: { label: string; point: PairedPoint; openMs: [number, number]; pending: number }[] = [];
  for (const gated of GATED_POINTS) {
    const opened = await freshQueue(`gated-${gated}`);
    let queue = opened.queue;
    try {
      if (gated > 0) {
        const started = performance.now();
        await enqueueMany(queue, SCOPE, gated, { notBefore: queue.clock.now() + 3600 * 1_000_000 });
        out(`  .. enqueued ${fmt(gated)} gated jobs in ${seconds(performance.now() - started)}`);
      }
      const point = await measurePaired(queue, `gated-${gated}`);
      const pending = commitStats(queue).pending;
      const reopened = await reopen(queue, opened.dir);
      queue = reopened.queue;
      rows.push({ label: `${count(gated)} gated`, point, openMs: [reopened.firstMs, reopened.secondMs], pending });
    } finally {
      await queue.close();
    }
  }
  out(LEASE_LEGEND);
  table(
    [...LEASE_HEADERS, 'pending after', ...OPEN_HEADERS],
    rows.map((r) => [...leaseRow(r.label, r.point), fmt(r.pending), ...openCells(r.openMs)]),
  );
  const empty = rows[0];
  const worst = rows[rows.length - 1];
  if (empty && worst && worst !== empty) printLeaseRatio(`worst (${worst.label})`, worst.point, empty.point);
}

/** Time `list(scope, Pending, limit 100)`: the one read that still walks the Pending key range. */
async function measureListPending(queue: Queue, n = 20): Promise<Summary> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await queue.list({ scope: SCOPE, state: JobState.Pending, limit: 100 });
    ms.push(performance.now() - started);
  }
  return summarize(ms);
}

async function tombstones(): Promise<void> {
  if (!SECTIONS.has('3')) return;
  section(
    `3. lease_next after ${count(TOMBSTONE_JOBS)} jobs passed through the Pending range (tombstones) vs a fresh store`,
  );
  const rows: { label: string; point: PairedPoint; listMs: Summary; openMs: [number, number] }[] = [];
  for (const through of [0, TOMBSTONE_JOBS]) {
    const opened = await freshQueue(`tombstones-${through}`);
    let queue = opened.queue;
    try {
      await timedPassThrough(queue, SCOPE, through, 'filling the Pending range with tombstones');
      // Pending work for list() to find behind the tombstones, then the timed leases.
      await enqueueMany(queue, SCOPE, 100, { notBefore: queue.clock.now() + 3600 * 1_000_000 });
      await settle();
      const listMs = await measureListPending(queue);
      const point = await measurePaired(queue, `tombstones-${through}`);
      const reopened = await reopen(queue, opened.dir);
      queue = reopened.queue;
      const label = through === 0 ? 'fresh store' : `${count(through)} passed through`;
      rows.push({ label, point, listMs, openMs: [reopened.firstMs, reopened.secondMs] });
    } finally {
      await queue.close();
    }
  }
  out(LEASE_LEGEND);
  out(
    '  list(pending): median ms of list({ state: Pending, limit: 100 }) over 20 calls, the read that still walks the key range',
  );
  table(
    [...LEASE_HEADERS, 'list ms', ...OPEN_HEADERS],
    rows.map((r) => [...leaseRow(r.label, r.point), fmt(r.listMs.median, 2), ...openCells(r.openMs)]),
  );
  const empty = rows[0];
  const worst = rows[rows.length - 1];
  if (empty && worst && worst !== empty) printLeaseRatio(`worst (${worst.label})`, worst.point, empty.point);
}

function recordSizes(): { enqueued: number; leased: number; completed: number } {
  const base: JobRecord = {
    jobId: '01890a5d-ac96-774b-bcce-b302099a8057',
    tenant: 'bench',
    kind: WORK_KIND,
    payload: PAYLOAD,
    priority: 128,
    createdAt: RAW_EPOCH,
    state: JobState.Pending,
    attempts: 0,
    leaseGeneration: 0,
    workerId: null,
    leaseDeadline: null,
    notBefore: null,
    idempotencyKey: null,
    maxAttempts: null,
    continuation: null,
    attemptDeadline: null,
    timeoutSecs: null,
    result: null,
    progress: null,
    traceContext: null,
    supersedeKey: null,
    supersededBy: null,
    debounceUntil: null,
    events: [{ at: RAW_EPOCH, transition: 'enqueued', detail: null }],
  };
  const leased: JobRecord = {
    ...base,
    state: JobState.Leased,
    leaseGeneration: 1,
    workerId: 'bench-worker-17',
    leaseDeadline: RAW_EPOCH + 30_000_000,
    events: [
      ...base.events,
      { at: RAW_EPOCH + 10, transition: 'leased', detail: 'worker=bench-worker-17 generation=1' },
    ],
  };
  const completed: JobRecord = {
    ...leased,
    state: JobState.Completed,
    events: [...leased.events, { at: RAW_EPOCH + 20, transition: 'completed', detail: null }],
  };
  return {
    enqueued: encodeRecord(base).length,
    leased: encodeRecord(leased).length,
    completed: encodeRecord(completed).length,
  };
}

async function throughput(durability: 'process' | 'fsync', concurrency: readonly number[]): Promise<void> {
  const fsync = durability === 'fsync';
  section(
    fsync
      ? `6. cycle throughput with storage.durability = 'fsync' (one WAL sync per group commit)`
      : '5. in-process cycle throughput (each worker: enqueue → leaseNext → complete)',
  );
  if (!fsync) {
    const sizes = recordSizes();
    out(
      `  job row sizes in this run: ${sizes.enqueued} B pending, ${sizes.leased} B leased, ${sizes.completed} B completed (${PAYLOAD.length} B payload)`,
    );
  }
  out(`  ${fmt(SECONDS, 1)} s measured per run after 0.5 s warm-up, fresh store per run`);
  const cycleRows: { label: string; point: CyclePoint }[] = [];
  for (const workers of concurrency) {
    const { queue } = await freshQueue(`cycles-${durability}-${workers}`, durability);
    try {
      const point = await measureCycles(queue, workers, SECONDS, 0.5);
      cycleRows.push({ label: `${workers} worker${workers === 1 ? '' : 's'}`, point });
    } finally {
      await queue.close();
    }
  }
  if (ON_POSTGRES) {
    table(
      CYCLE_HEADERS.slice(0, 4),
      cycleRows.map((r) => cycleRow(r.label, r.point).slice(0, 4)),
    );
    return;
  }
  const rawDb = await RocksDatabase.open(await newDir(`raw-${durability}`), ['jobs', 'ids', 'finished', 'counts']);
  let serial: RawPoint;
  try {
    measureRaw(rawDb, fsync, Math.min(0.3, RAW_SECONDS)); // warm-up
    serial = measureRaw(rawDb, fsync, RAW_SECONDS);
  } finally {
    await rawDb.close();
  }
  table(
    CYCLE_HEADERS,
    cycleRows.map((r) => cycleRow(r.label, r.point)),
  );
  out();
  out(
    `  raw RocksDatabase.write batches of one transition each (enqueue / lease / complete shapes in turn: 3 / 5 / 6 ops,${fsync ? ' WAL synced,' : ''} ${fmt(RAW_SECONDS, 1)} s)`,
  );
  table(
    ['case', 'batches/s', 'µs/batch', 'batches'],
    [
      [
        `raw, back to back${fsync ? ', sync' : ''}`,
        fmt(serial.perSecond),
        fmt(1e6 / serial.perSecond, 1),
        fmt(serial.writes),
      ],
    ],
  );
  const top = cycleRows[cycleRows.length - 1];
  if (top) {
    out();
    out(
      `  cycles/s at ${top.label} ÷ raw transition batches/s: ${fmt(top.point.perSecond / serial.perSecond, 3)}` +
        `  (target from the issue: ≥ 0.333; a cycle is three transitions)`,
    );
    const first = cycleRows[0];
    if (first && first !== top)
      out(`  ${top.label} / ${first.label} speed-up: ${ratio(top.point.perSecond, first.point.perSecond)}`);
    out(
      `  queue.stats() after the ${top.label} run: transitions (units) per write batch = ${fmt(top.point.units / Math.max(1, top.point.batches), 1)}` +
        `, ${fmt(top.point.units / Math.max(1, top.point.cycles), 2)} units per cycle` +
        (top.point.misses > 0 ? `, ${top.point.misses} empty leases` : ''),
    );
  }
}

// ---------------------------------------------------------------- main

function loadAverage(): string {
  return os
    .loadavg()
    .map((l) => fmt(l, 2))
    .join(' / ');
}

async function main(): Promise<void> {
  const started = performance.now();
  root = await mkdtemp(path.join(os.tmpdir(), 'telha-bench-'));
  const cpus = os.cpus();
  out(`Telha engine benchmark, ${ON_POSTGRES ? `PostgreSQL backend (${PG_URL})` : 'embedded RocksDB backend'}`);
  out(
    `  node ${process.version} (${process.platform}/${process.arch}), ${cpus.length} CPU(s): ${cpus[0]?.model.trim() ?? 'unknown'}`,
  );
  out(`  memory ${fmt(os.totalmem() / 2 ** 30, 1)} GiB, temp dir ${root}`);
  out(
    `  BENCH_SCALE=${SCALE} (Completed ${COMPLETED_POINTS.map(count).join('/')}, gated ${GATED_POINTS.map(count).join('/')}, ` +
      `tombstones ${count(TOMBSTONE_JOBS)}), BENCH_LEASES=${LEASES}, BENCH_EXPIRED=${EXPIRED}, BENCH_SECONDS=${SECONDS}`,
  );
  out(`  load average at start: ${loadAverage()} (other processes on the machine skew every number)`);
  out(`  timers: performance.now() around each awaited call; latencies include one group-commit turn (setImmediate)`);
  try {
    await warmUp();
    await completedRowsAndReaper();
    await gatedRows();
    await tombstones();
    if (SECTIONS.has('5')) await throughput('process', CONCURRENCY);
    if (SECTIONS.has('6')) await throughput('fsync', FSYNC_CONCURRENCY);
  } finally {
    await rm(root, { recursive: true, force: true });
    await dropPgSchemas();
  }
  out();
  out(`total wall time: ${seconds(performance.now() - started)}; load average at end: ${loadAverage()}`);
}

await main();
