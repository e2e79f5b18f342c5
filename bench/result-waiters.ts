/**
 * `client.result` with many waiters (`npm run bench:result-waiters`): `telha serve` in a child
 * process on a fresh RocksDB store. In this process one client waits on `result` for N jobs at
 * once while another leases and completes them, each with a small result: one `complete` call
 * after another (N jobs), then, in a second table, in `completeEach` calls of 100 (a commit each,
 * as a worker's batched completions are) over 1,000 jobs of which N are awaited, and in a third
 * all N in one `completeEach` (one commit) without results. Each sample is
 * the time from a job's commit (its `completed` event, stamped by the server as the commit
 * begins) to its `result` resolving here, on the same machine's clock. N = 1, 10, 100, 200, 1,000
 * by default.
 *
 * Before the completions start, the waiters get time to open what they wait on (BENCH_SETTLE_MS,
 * plus 2 ms a waiter): this process cannot see the server's side, and a benchmark may wait.
 *
 * Env: BENCH_WAITERS (comma-separated, default 1,10,100,200,1000), BENCH_ROUNDS (3, more while there
 * are fewer than BENCH_MIN_SAMPLES samples, 30), BENCH_JOBS (1000), BENCH_SETTLE_MS (200),
 * BENCH_COMPLETION (one of the two, default both).
 * Prints numbers only; nothing here asserts on time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TelhaClient, tenantScope } from 'telha/client';
import { envNumber, fmt, formatTable, median, percentile, sleep, startServer } from './support.ts';

const WAITERS = (process.env['BENCH_WAITERS'] ?? '1,10,100,200,1000').split(',').map(Number);
const JOBS = Math.max(envNumber('BENCH_JOBS', 1_000), ...WAITERS);
const ROUNDS = envNumber('BENCH_ROUNDS', 3);
/** Rounds are repeated until there are at least this many samples: one waiter is one sample a round. */
const MIN_SAMPLES = envNumber('BENCH_MIN_SAMPLES', 30);
const SETTLE_MS = envNumber('BENCH_SETTLE_MS', 200);
const scope = tenantScope('bench');

/** The server's clock and this process's read the same wall clock: milliseconds since the epoch. */
const nowMs = (): number => performance.timeOrigin + performance.now();

/**
 * How a round completes its jobs: one `complete` call after another, `completeEach` calls of up to
 * 100 (one commit each, as a worker's batched completions are), or all in one `completeEach`
 * without results (a waiter learns from the event alone that there is none).
 */
type Completion = 'one by one' | 'in batches of 100' | 'in one commit, without results';

const COMPLETIONS: readonly Completion[] =
  process.env['BENCH_COMPLETION'] === undefined
    ? ['one by one', 'in batches of 100', 'in one commit, without results']
    : [process.env['BENCH_COMPLETION'] as Completion];

/** What each job's handler returned: a small result, carried by its event (a job without one is read again). */
const RESULT = new TextEncoder().encode('{"ok":true}');

/**
 * One round: `waiters` results awaited at once, then their jobs completed; ms from each commit to
 * its result. In batches, the awaited jobs are spread evenly among JOBS completed, so every round
 * makes the same commits and differs only in how many results wait.
 */
async function round(address: string, waiters: number, kind: string, completion: Completion): Promise<number[]> {
  const waiting = new TelhaClient({ address });
  const completer = new TelhaClient({ address });
  try {
    const jobs = completion === 'in batches of 100' ? JOBS : waiters;
    const enqueued = await completer.enqueueBatch(
      Array.from({ length: jobs }, () => ({ kind })),
      scope,
    );
    const awaited = enqueued.filter((_, i) => i % Math.floor(jobs / waiters) === 0).slice(0, waiters);
    const latencies = Promise.all(
      awaited.map(({ job }) =>
        waiting.result(job.jobId).then(({ job: done }) => {
          const resolved = nowMs();
          const completed = done.events.findLast((e) => e.transition === 'completed');
          return resolved - (completed?.at ?? NaN) / 1_000;
        }),
      ),
    );
    // A round that fails below closes the clients, which rejects every wait: the round's own
    // error is the one to report, not a crash on the waits' unhandled rejections.
    latencies.catch(() => undefined);
    await sleep(SETTLE_MS + 2 * waiters);
    for (let left = waiters; left > 0;) {
      const leased = await completer.lease({ workerId: 'bench', kinds: [kind], limit: Math.min(left, 1_000) });
      left -= leased.length;
      const fences = leased.map((job) => ({
        jobId: job.jobId,
        fence: { workerId: 'bench', leaseGeneration: job.leaseGeneration },
      }));
      if (completion === 'one by one') {
        for (const { jobId, fence } of fences) await completer.complete(jobId, fence, { result: RESULT });
      } else if (completion === 'in one commit, without results') {
        await completer.completeEach(fences);
      } else {
        for (let i = 0; i < fences.length; i += 100) {
          await completer.completeEach(fences.slice(i, i + 100).map((item) => ({ ...item, result: RESULT })));
        }
      }
    }
    return await latencies;
  } finally {
    waiting.close();
    completer.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'telha-bench-results-'));
// Leases outlive any round: a round of 1,000 completions one by one must not see its leases reaped.
const server = await startServer(dir, { TELHA_JOBS__LEASE_TTL_SECS: '3600' });
try {
  for (const completion of COMPLETIONS) {
    const rows: string[][] = [];
    let oneMedian = NaN;
    for (const waiters of WAITERS) {
      const samples: number[] = [];
      const medians: number[] = [];
      const rounds = Math.max(ROUNDS, Math.ceil(MIN_SAMPLES / waiters));
      for (let r = 0; r < rounds; r++) {
        const latencies = await round(
          server.address,
          waiters,
          `wait.${completion.replaceAll(/[ ,]+/g, '-')}.${waiters}.${r}`,
          completion,
        );
        samples.push(...latencies);
        medians.push(median(latencies));
      }
      const sorted = samples.sort((a, b) => a - b);
      const p50 = percentile(sorted, 0.5);
      if (waiters === 1) oneMedian = p50;
      console.log(
        `${completion}, ${waiters} waiters: median ${fmt(p50, 1)} ms, p99 ${fmt(percentile(sorted, 0.99), 1)} ms`,
      );
      rows.push([
        fmt(waiters),
        fmt(p50, 1),
        fmt(percentile(sorted, 0.99), 1),
        fmt(sorted[sorted.length - 1] ?? NaN, 1),
        fmt(rounds),
        medians.length <= 5 ? medians.map((m) => fmt(m, 1)).join(' / ') : '',
        fmt(p50 / oneMedian, 1),
      ]);
    }
    console.log(`\ncommit to result, ms: jobs completed ${completion}`);
    console.log(formatTable(['waiters', 'median', 'p99', 'max', 'rounds', 'round medians', 'x one waiter'], rows));
  }
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
