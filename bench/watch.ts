/**
 * What the transitions log costs the drain through the server: `telha serve`
 * in a child process (RocksDB, or PostgreSQL with BENCH_BACKEND=postgres),
 * an SDK Worker at concurrency 100 draining BENCH_JOBS no-op jobs enqueued in
 * batches of 100, with the log on or off (BENCH_WATCH=on|off: `watch.enabled`)
 * and, with BENCH_WATCHERS=1, a watcher reading every transition meanwhile;
 * BENCH_RESULT=1 has each handler return a small JSON result and
 * BENCH_PROGRESS=1 report progress once, to price those.
 * Run the on and off variants in turn, several times, and compare medians:
 * the machine's speed drifts.
 *
 * Env: BENCH_JOBS (default 20000), BENCH_BACKEND (rocksdb), BENCH_WATCH (on), BENCH_WATCHERS (0),
 * BENCH_RESULT (0), BENCH_PROGRESS (0),
 * TELHA_TEST_PG_URL for PostgreSQL. Prints numbers only; nothing here asserts on time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { TelhaClient } from 'telha/client';
import { drainRate, envNumber, fmt, startServer } from './support.ts';

const JOBS = envNumber('BENCH_JOBS', 20_000);
const WATCHERS = envNumber('BENCH_WATCHERS', 0);
/** BENCH_RESULT=1: each handler returns a small JSON object, stored with its completion. */
const RESULT = process.env['BENCH_RESULT'] === '1';
/** BENCH_PROGRESS=1: each handler reports progress once (a fenced heartbeat carrying it). */
const PROGRESS = process.env['BENCH_PROGRESS'] === '1';
const backend = process.env['BENCH_BACKEND'] ?? 'rocksdb';
const log = (process.env['BENCH_WATCH'] ?? 'on') !== 'off';
const url = process.env['TELHA_TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `telha_bench_watch_${process.pid}`;

const dir = mkdtempSync(join(tmpdir(), 'telha-bench-watch-'));
const env: Record<string, string> = { TELHA_WATCH__ENABLED: String(log) };
if (backend === 'postgres') {
  Object.assign(env, { TELHA_STORAGE__KIND: 'postgres', TELHA_STORAGE__URL: url, TELHA_STORAGE__SCHEMA: schema });
}
const server = await startServer(dir, env);
const stop = new AbortController();
let watched = 0;
try {
  const watchers = Array.from({ length: log ? WATCHERS : 0 }, async () => {
    const client = new TelhaClient({ address: server.address });
    try {
      for await (const event of client.watch({ signal: stop.signal })) if (event.transition !== '') watched++;
    } catch {
      // Ended by the abort.
    } finally {
      client.close();
    }
  });
  const rate = await drainRate(server.address, {
    concurrency: 100,
    jobs: JOBS,
    kind: () => 'drain',
    handler: async (job) => {
      if (PROGRESS) await job.progress({ step: 1, of: 2 });
      return RESULT ? { ok: true, rows: 42 } : undefined;
    },
  });
  stop.abort();
  await Promise.all(watchers);
  console.log(
    `${backend} log=${log ? 'on' : 'off'} watchers=${log ? WATCHERS : 0} result=${RESULT} progress=${PROGRESS}: ${fmt(rate)} jobs/s` +
      (WATCHERS > 0 && log ? ` (watched ${fmt(watched)} transitions)` : ''),
  );
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
  if (backend === 'postgres') {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}
