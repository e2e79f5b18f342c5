/** Conformance cases: the queue's observers, and the store's metrics. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState } from '../../core/types.ts';
import { observeEach, type QueueObservation } from '../../engine/observers.ts';
import { fenceOf, jobIn } from './harness.ts';
import { acme, ErrorCode, rejects, SECOND, type Suite } from './context.ts';

/** What an observer saw, as `transition previous→state` lines (and `refused reason`). */
function watch(s: Suite): { seen: string[]; stop: () => void } {
  const seen: string[] = [];
  const stop = observeEach(s.q.events, (o: QueueObservation) => {
    seen.push(
      o.type === 'refused' ? `refused ${o.reason}` : `${o.transition} ${o.previous ?? 'new'}→${o.record.state}`,
    );
  });
  return { seen, stop };
}

export function observeCases(s: Suite): void {
  describe('observers and store metrics', () => {
    it('tells an observer of each committed transition, with the state before, on every path', async () => {
      const { seen, stop } = watch(s);
      const P = JobState.Pending;
      const L = JobState.Leased;
      const D = JobState.Dead;
      const [a, b, c] = (await s.q.enqueueBatch([{ kind: 'k' }, { kind: 'k' }, { kind: 'k' }], acme)).map((r) => r.job);
      const leased = await s.q.lease({ workerId: 'w', scope: acme, limit: 3 });
      assert.equal(leased.length, 3);
      const [la, lb, lc] = leased as [(typeof leased)[0], (typeof leased)[0], (typeof leased)[0]];
      await s.q.heartbeat(la.jobId, fenceOf(la));
      await s.q.complete(la.jobId, fenceOf(la), { successors: [{ kind: 'next' }] });
      await s.q.completeEach([{ jobId: lb.jobId, fence: fenceOf(lb) }]);
      await s.q.failEach([{ jobId: lc.jobId, fence: fenceOf(lc), error: 'x', permanent: true }]);
      await s.q.retry(lc.jobId);
      const again = await s.lease(acme, 'w2', ['k']);
      s.h.clock.advanceSeconds(s.h.config.jobs.lease_ttl_secs);
      await s.q.maintenance.reapExpired();
      stop();
      await s.q.enqueue({ kind: 'k' }, acme); // after the unsubscribe: not seen
      assert.deepEqual(seen, [
        `enqueue new→${P}`,
        `enqueue new→${P}`,
        `enqueue new→${P}`,
        `lease ${P}→${L}`,
        `lease ${P}→${L}`,
        `lease ${P}→${L}`,
        `heartbeat ${L}→${L}`,
        `complete ${L}→${JobState.Completed}`,
        `enqueue new→${P}`,
        `complete ${L}→${JobState.Completed}`,
        `fail ${L}→${D}`,
        `retry ${D}→${P}`,
        `lease ${P}→${L}`,
        `reap ${L}→${P}`,
      ]);
      assert.deepEqual([a, b, c].map((j) => j?.jobId).includes(again.jobId), true);
    });

    it('tells an observer of fenced submissions refused, single and each, and of nothing else they did', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      const { seen, stop } = watch(s);
      await rejects(
        s.q.complete(job.jobId, { workerId: 'other', leaseGeneration: job.leaseGeneration }),
        ErrorCode.LeaseConflict,
      );
      await rejects(
        s.q.heartbeat(job.jobId, { workerId: job.workerId ?? '', leaseGeneration: job.leaseGeneration + 1 }),
        ErrorCode.LeaseConflict,
      );
      const [item] = await s.q.failEach([
        { jobId: job.jobId, fence: { workerId: 'other', leaseGeneration: 1 }, error: 'x' },
      ]);
      assert.equal(item?.ok, false);
      await rejects(s.q.retry(job.jobId), ErrorCode.FailedPrecondition);
      stop();
      assert.deepEqual(seen, ['refused worker_mismatch', 'refused generation_superseded', 'refused worker_mismatch']);
    });

    it('reports the oldest Pending job, gated or ready, and none once nothing is Pending', async () => {
      const first = await jobIn(s.h, acme, 'pending', { kind: 'a', delayMs: 60_000 });
      s.h.clock.advance(SECOND);
      await jobIn(s.h, acme, 'pending', { kind: 'b' });
      const metrics = await s.q.storeMetrics();
      if (metrics.oldestPendingAt === undefined) return; // a store that keeps no such figure
      assert.equal(metrics.oldestPendingAt, first.createdAt);
      await s.q.leaseNext({ workerId: 'w', scope: acme });
      s.h.clock.advanceSeconds(120);
      await s.q.leaseNext({ workerId: 'w', scope: acme });
      assert.equal((await s.q.storeMetrics()).oldestPendingAt, null);
    });
  });
}
