/**
 * Backups and moving a store (`npm run bench:backup`): a RocksDB store of BENCH_JOBS jobs
 * (default 1M; a tenth of them completed) backed up while a writer keeps enqueueing, one awaited
 * enqueue at a time; then exported to a file and imported into a fresh RocksDB store and a fresh
 * PostgreSQL schema (BENCH_PG=0 skips it).
 *
 * Reported: the backup's time and rows, how long writes were held back for its cut (`pauseMicros`),
 * and the writer's slowest enqueue during the backup beside its slowest in an equally long window
 * right after it (paired, in the same process: the machine's noise shows in both); then export
 * and import times. Durations are wall-clock on whatever else the machine runs.
 */
import { createReadStream, createWriteStream, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { systemClock } from '../src/core/clock.ts';
import { makeConfig } from '../src/core/config.ts';
import { tenantScope } from '../src/core/types.ts';
import type { Queue } from '../src/engine/queue.ts';
import { exportStore, importStore, type TransferCounts } from '../src/engine/transfer.ts';
import type { JobStore } from '../src/storage/types.ts';
import { openQueue, openStore } from '../src/open.ts';
import { count, envNumber, fmt } from './support.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';

const JOBS = envNumber('BENCH_JOBS', 1_000_000);
const WITH_PG = process.env['BENCH_PG'] !== '0';
const PG_URL = process.env['TELHA_TEST_PG_URL'] ?? 'postgres://root@127.0.0.1:5432/test';
const acme = tenantScope('acme');

const seconds = (ms: number): string => `${fmt(ms / 1000, 1)} s`;

function du(path: string): number {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const at = join(path, entry.name);
    total += entry.isDirectory() ? du(at) : statSync(at).size;
  }
  return total;
}

async function fill(queue: Queue): Promise<void> {
  const started = performance.now();
  for (let n = 0; n < JOBS; n += 1_000) {
    const size = Math.min(1_000, JOBS - n);
    await queue.enqueueBatch(
      Array.from({ length: size }, (_, i) => ({ kind: `bench.${i % 10}`, payload: `{"n":${n + i}}` })),
      acme,
    );
  }
  // A tenth completed: finished rows and their index, besides the Pending ones.
  for (let done = 0; done < JOBS / 10;) {
    const leased = await queue.lease({ workerId: 'bench', scope: acme, limit: 1_000 });
    for (const job of leased) {
      await queue.complete(job.jobId, { workerId: 'bench', leaseGeneration: job.leaseGeneration });
    }
    done += leased.length;
  }
  console.log(`filled ${count(JOBS)} jobs in ${seconds(performance.now() - started)}`);
}

/** Awaited enqueues one after another until `until` settles; the slowest one's time (ms) and how many. */
async function writer(queue: Queue, until: Promise<unknown>): Promise<{ slowestMs: number; writes: number }> {
  let done = false;
  void until.finally(() => (done = true));
  let slowestMs = 0;
  let writes = 0;
  while (!done) {
    const started = performance.now();
    await queue.enqueue({ kind: 'bench.live', payload: 'x' }, acme);
    slowestMs = Math.max(slowestMs, performance.now() - started);
    writes++;
  }
  return { slowestMs, writes };
}

/** Export `store` into `file` as NDJSON, writing as fast as the file takes it. */
async function exportTo(store: JobStore, file: string): Promise<TransferCounts> {
  const out = createWriteStream(file);
  const counts = await exportStore(
    store,
    async (text) => {
      if (!out.write(text)) await once(out, 'drain');
    },
    systemClock,
  );
  out.end();
  await once(out, 'close');
  return counts;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'telha-bench-backup-'));
  try {
    const store = join(dir, 'store');
    const queue = await openQueue({ config: makeConfig({ storage: { path: store } }), services: false });
    await fill(queue);

    const backupStarted = performance.now();
    const backup = queue.backup(join(dir, 'backup'));
    const during = await writer(queue, backup);
    const summary = await backup;
    const backupMs = performance.now() - backupStarted;
    const quietWindow = new Promise((resolve) => setTimeout(resolve, backupMs));
    const after = await writer(queue, quietWindow);
    await queue.close();
    console.log(
      `backup: ${count(summary.jobs)} jobs, ${fmt(summary.rows)} rows, ${fmt(du(summary.path) / 2 ** 20)} MiB in ${seconds(summary.durationMicros / 1000)}`,
    );
    console.log(`  writes held back for the cut: ${fmt(summary.pauseMicros / 1000, 2)} ms`);
    console.log(
      `  slowest enqueue during the backup: ${fmt(during.slowestMs, 1)} ms (${fmt(during.writes)} enqueues); in as long a window after it: ${fmt(after.slowestMs, 1)} ms (${fmt(after.writes)})`,
    );

    const file = join(dir, 'export.ndjson');
    let started = performance.now();
    const source = await openStore(makeConfig({ storage: { path: store } }));
    const counts = await exportTo(source, file);
    await source.close();
    console.log(
      `export: ${count(counts.job)} jobs, ${fmt(statSync(file).size / 2 ** 20)} MiB in ${seconds(performance.now() - started)}`,
    );
    const lines = (): AsyncIterable<string> => createInterface({ input: createReadStream(file), crlfDelay: Infinity });

    started = performance.now();
    const rocks = await openStore(makeConfig({ storage: { path: join(dir, 'imported') } }));
    await importStore(rocks, lines, { merge: false }, systemClock);
    await rocks.close();
    console.log(`import into RocksDB: ${seconds(performance.now() - started)} (both reads of the file)`);

    if (WITH_PG) {
      const schema = `telha_bench_backup_${process.pid}`;
      started = performance.now();
      const target = await openStore(makeConfig({ storage: { kind: 'postgres', url: PG_URL, schema } }));
      try {
        await importStore(target, lines, { merge: false }, systemClock);
        console.log(`import into PostgreSQL: ${seconds(performance.now() - started)} (both reads of the file)`);
        started = performance.now();
        await exportTo(target, join(dir, 'from-pg.ndjson'));
        console.log(`export from PostgreSQL: ${seconds(performance.now() - started)}`);
      } finally {
        await target.close();
        const admin = new pg.Client({ connectionString: PG_URL });
        await admin.connect();
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await admin.end();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
