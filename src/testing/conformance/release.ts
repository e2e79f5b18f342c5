/**
 * Conformance cases: handing a leased job back (release). Its fencing (a
 * stale, foreign or unleased release is refused) is in `fencing.ts`, with
 * every other fenced submission.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState } from '../../core/types.ts';
import { fenceOf, jobIn } from './harness.ts';
import { acme, globex, ErrorCode, rejects, conflict, type Suite } from './context.ts';

export function releaseCases(s: Suite): void {
  describe('release', () => {
    it('hands a leased job back: leasable at once by another worker, no attempt charged, a released event', async () => {
      const job = await jobIn(s.h, acme, 'leased', { kind: 'k', maxAttempts: 1 });
      await s.q.checkpoint(job.jobId, fenceOf(job), Buffer.from('seq=3'));
      const released = await s.q.release(job.jobId, fenceOf(job));
      assert.equal(released.state, JobState.Pending);
      assert.equal(released.attempts, 0);
      assert.equal(released.leaseGeneration, job.leaseGeneration);
      assert.equal(released.workerId, null);
      assert.equal(released.leaseDeadline, null);
      assert.equal(released.continuation, null);
      assert.equal(released.notBefore, null);
      assert.deepEqual(released.events.at(-1), {
        at: s.now(),
        transition: 'released',
        detail: `worker=fixture-worker generation=${job.leaseGeneration}`,
      });
      assert.deepEqual(await s.q.show(job.jobId), released);
      // No clock movement, no reaper: the next worker gets it now, fencing the first one out.
      const next = await s.lease(acme, 'w2');
      assert.equal(next.jobId, job.jobId);
      assert.equal(next.leaseGeneration, job.leaseGeneration + 1);
      await rejects(s.q.complete(job.jobId, fenceOf(job)), ErrorCode.LeaseConflict, conflict('worker_mismatch'));
      // A job with one attempt left still has it: releasing it charged nothing.
      const failed = await s.q.fail(next.jobId, fenceOf(next), { error: 'boom' });
      assert.equal(failed.state, JobState.Dead);
      assert.equal(failed.attempts, 1);
    });

    it('opens a backoff gate the job was leased past, and wakes a parked lease call', async () => {
      const { job } = await s.q.enqueue({ kind: 'k' }, acme);
      const first = await s.lease(acme, 'w1');
      const failed = await s.q.fail(first.jobId, fenceOf(first), { error: 'again' });
      s.h.clock.advance((failed.notBefore ?? 0) - s.now());
      const second = await s.lease(acme, 'w1');
      assert.ok(second.notBefore !== null, 'the lease keeps the gate it passed');
      const parked = s.q.lease({ workerId: 'w2', scope: acme, waitMs: 60_000 });
      while (s.q.waits.parked === 0) await new Promise((resolve) => setImmediate(resolve));
      const woken = s.q.waits.ended.woken;
      await s.q.release(second.jobId, fenceOf(second));
      const [leased] = await parked;
      assert.equal(leased?.jobId, job.jobId);
      assert.equal(leased.attempts, 1);
      assert.equal(s.q.waits.ended.woken, woken + 1, 'woken by the release, not by its timeout');
    });

    it('releases each item on its own: the held ones go back, the rest change nothing', async () => {
      const held = [await jobIn(s.h, acme, 'leased'), await jobIn(s.h, acme, 'leased')];
      const stale = await jobIn(s.h, acme, 'leased');
      const foreign = await jobIn(s.h, globex, 'leased');
      const results = await s.q.releaseEach(
        [
          { jobId: held[0]!.jobId, fence: fenceOf(held[0]!) },
          { jobId: stale.jobId, fence: { ...fenceOf(stale), leaseGeneration: stale.leaseGeneration + 1 } },
          { jobId: foreign.jobId, fence: fenceOf(foreign) },
          { jobId: 'not-a-uuid', fence: fenceOf(stale) },
          { jobId: held[1]!.jobId, fence: fenceOf(held[1]!) },
        ],
        acme,
      );
      assert.deepEqual(
        results.map((r) => (r.ok ? r.value.state : null)),
        [JobState.Pending, null, null, null, JobState.Pending],
      );
      for (const [i, code] of [
        [1, ErrorCode.LeaseConflict],
        [2, ErrorCode.NotFound],
        [3, ErrorCode.InvalidArgument],
      ] as const) {
        const result = results[i];
        assert.ok(result !== undefined && !result.ok);
        await rejects(Promise.reject(result.error), code);
      }
      assert.deepEqual(await s.q.show(stale.jobId), stale);
      assert.deepEqual(await s.q.show(foreign.jobId), foreign);
      const again = await s.q.lease({ workerId: 'w2', scope: acme, limit: 10 });
      assert.deepEqual(again.map((j) => j.jobId).sort(), held.map((j) => j.jobId).sort());
    });
  });
}
