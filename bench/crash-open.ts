/**
 * Opening a RocksDB store after a crash (issue 16): a child process pushes
 * `BENCH_CRASH_JOBS` jobs (default 1M) through enqueue → lease → complete
 * with the public API and is SIGKILLed without closing, so its write-ahead
 * log is left unflushed, as after a power cut of the process. Then the
 * parent copies the crashed directory and opens each copy, reporting the
 * median of `BENCH_CRASH_OPENS` opens (default 3): the database alone, and
 * the whole queue (the store's rebuild of its live index included), with the
 * size of the WAL the open had to replay.
 *
 *   npm run bench:crash-open
 *   BENCH_CRASH_JOBS=200000 npm run bench:crash-open
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeConfig } from '../src/core/config.ts';
import { JobState } from '../src/core/types.ts';
import { openQueue } from '../src/open.ts';
import { RocksDatabase } from '../src/storage/rocksdb/database.ts';
import { COLUMNS, COLUMN_TUNING } from '../src/storage/rocksdb/columns.ts';
import { passThrough } from './peers/telha-fill.ts';
import { count, envNumber, fmt, median } from './support.ts';

const JOBS = envNumber('BENCH_CRASH_JOBS', 1_000_000);
const OPENS = Math.max(1, envNumber('BENCH_CRASH_OPENS', 3));

async function child(dir: string, jobs: number): Promise<never> {
  const queue = await openQueue({ config: makeConfig({ storage: { path: dir } }), services: false });
  let reported = 0;
  await passThrough(queue, jobs, (done) => {
    if (done - reported >= 100_000 || done === jobs) {
      reported = done;
      process.stdout.write(`.. ${count(done)} completed\n`);
    }
  });
  // Every completion above was acknowledged (the group commit wrote it); nothing is flushed or closed.
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
}

async function bytesOf(dir: string, suffix: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir)) if (name.endsWith(suffix)) total += (await stat(join(dir, name))).size;
  return total;
}

async function parent(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'telha-crash-open-'));
  const crashed = join(root, 'crashed');
  try {
    const started = performance.now();
    const filler = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(import.meta.url), 'child', crashed, String(JOBS)],
      { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
      filler.on('exit', (_code, sig) => resolve(sig)),
    );
    if (signal !== 'SIGKILL') throw new Error(`the filling child ended by ${signal ?? 'exit'}, not SIGKILL`);
    console.log(`${count(JOBS)} jobs completed, then SIGKILL, in ${fmt((performance.now() - started) / 1000, 1)} s`);
    console.log(
      `left behind: WAL ${fmt((await bytesOf(crashed, '.log')) / 2 ** 20, 1)} MiB, SST ${fmt((await bytesOf(crashed, '.sst')) / 2 ** 20, 1)} MiB`,
    );

    const dbOnly: number[] = [];
    const whole: number[] = [];
    for (let i = 0; i < OPENS; i++) {
      const copy = join(root, `open-db-${i}`);
      await cp(crashed, copy, { recursive: true });
      let t0 = performance.now();
      const db = await RocksDatabase.open(copy, COLUMNS, COLUMN_TUNING);
      dbOnly.push(performance.now() - t0);
      await db.close();

      const copy2 = join(root, `open-queue-${i}`);
      await cp(crashed, copy2, { recursive: true });
      t0 = performance.now();
      const queue = await openQueue({ config: makeConfig({ storage: { path: copy2 } }), services: false });
      whole.push(performance.now() - t0);
      const completed = (await queue.counts()).reduce(
        (n, row) => n + (row.state === JobState.Completed ? row.count : 0),
        0,
      );
      await queue.close();
      if (completed !== JOBS) throw new Error(`reopened store counts ${completed} Completed jobs, expected ${JOBS}`);
      await rm(copy, { recursive: true, force: true });
      await rm(copy2, { recursive: true, force: true });
    }
    console.log(
      `open after the crash, median of ${OPENS}: database ${fmt(median(dbOnly))} ms, queue (with its rebuild) ${fmt(median(whole))} ms; every acknowledged job there`,
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'child') await child(process.argv[3] as string, Number(process.argv[4]));
else await parent();
