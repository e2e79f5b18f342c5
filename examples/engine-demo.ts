/**
 * A short tour of the engine, in-process on a fresh RocksDB store: enqueue,
 * lease with fencing, a failure that backs off, a dead letter, a reaped
 * lease whose stale worker is rejected, and the final counts.
 *
 * Run: node --import tsx examples/engine-demo.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/core/clock.ts';
import { makeConfig } from '../src/core/config.ts';
import { isTelhaError } from '../src/core/errors.ts';
import { JOB_STATE_NAMES, tenantScope } from '../src/core/types.ts';
import { openQueue } from '../src/open.ts';

const dir = mkdtempSync(join(tmpdir(), 'telha-demo-'));
const clock = new ManualClock(Date.now() * 1000);
const queue = await openQueue({
  config: makeConfig({ storage: { path: dir }, jobs: { max_attempts: 2, lease_ttl_secs: 30 } }),
  clock,
  services: false,
});
const acme = tenantScope('acme');
const say = (line: string): void => console.log(line);

try {
  const total = 1_000;
  const started = performance.now();
  await queue.enqueueBatch(
    Array.from({ length: total }, (_, i) => ({
      kind: i % 10 === 0 ? 'report' : 'email',
      payload: Buffer.from(`job ${i}`),
    })),
    acme,
  );
  say(`enqueued ${total} jobs in one atomic batch`);

  // Four workers drain the queue; every report job fails once.
  let completed = 0;
  let failed = 0;
  const worker = async (workerId: string): Promise<void> => {
    for (;;) {
      const job = await queue.leaseNext({ workerId, scope: acme });
      if (job === null) return;
      const fence = { workerId, leaseGeneration: job.leaseGeneration };
      if (job.kind === 'report') {
        await queue.fail(job.jobId, fence, { error: 'report service unavailable' });
        failed++;
      } else {
        await queue.complete(job.jobId, fence);
        completed++;
      }
    }
  };
  await Promise.all(['w1', 'w2', 'w3', 'w4'].map(worker));
  const ms = performance.now() - started;
  say(
    `4 workers: ${completed} completed, ${failed} failed and backing off (${Math.round((completed + failed) / (ms / 1000))} jobs/s)`,
  );

  // The failed jobs are gated by backoff (10 s); move the clock past it and fail them again: dead-lettered.
  clock.advanceSeconds(11);
  for (;;) {
    const job = await queue.leaseNext({ workerId: 'w1', scope: acme });
    if (job === null) break;
    await queue.fail(job.jobId, { workerId: 'w1', leaseGeneration: job.leaseGeneration }, { error: 'still down' });
  }

  // A worker dies mid-job: its lease expires, the reaper hands the job back, the stale submit is refused.
  const { job } = await queue.enqueue({ kind: 'email', payload: Buffer.from('late') }, acme);
  const first = await queue.leaseNext({ workerId: 'doomed', scope: acme });
  clock.advanceSeconds(31);
  const reaped = await queue.maintenance.reapExpired();
  clock.advanceSeconds(11);
  const second = await queue.leaseNext({ workerId: 'survivor', scope: acme });
  try {
    await queue.complete(job.jobId, { workerId: 'doomed', leaseGeneration: first?.leaseGeneration ?? 0 });
  } catch (error) {
    if (isTelhaError(error)) say(`stale worker rejected: ${error.message}`);
  }
  await queue.complete(job.jobId, { workerId: 'survivor', leaseGeneration: second?.leaseGeneration ?? 0 });
  say(`reaper reclaimed ${reaped.reaped} lease(s); the survivor completed generation ${second?.leaseGeneration}`);

  for (const row of await queue.counts(acme))
    say(`  ${JOB_STATE_NAMES[row.state].padEnd(10)} ${row.kind.padEnd(8)} ${row.count}`);
  const shown = await queue.show(job.jobId);
  say(`lifecycle of ${job.jobId}:`);
  for (const e of shown.events)
    say(`  ${new Date(e.at / 1000).toISOString()}  ${e.transition.padEnd(10)} ${e.detail ?? ''}`);
} finally {
  await queue.close();
  rmSync(dir, { recursive: true, force: true });
}
