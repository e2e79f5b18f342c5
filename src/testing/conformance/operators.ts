/** Conformance cases: an operator's discard of a Dead job, and run now of a gated Pending job. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState } from '../../core/types.ts';
import { fenceOf, jobIn } from './harness.ts';
import { acme, countsOf, ErrorCode, globex, rejects, SECOND, type Suite } from './context.ts';

export function operatorCases(s: Suite): void {
  describe('discard', () => {
    it('moves a Dead job to Cancelled with its own event, keeping its trail', async () => {
      const dead = await jobIn(s.h, acme, 'dead');
      const discarded = await s.q.discard(dead.jobId, { by: 'operator', reason: 'seen it' });
      assert.equal(discarded.state, JobState.Cancelled);
      assert.equal(discarded.attempts, dead.attempts);
      assert.deepEqual(discarded.events.slice(0, -1), dead.events, 'the trail before it is kept');
      assert.deepEqual(discarded.events.at(-1), {
        at: s.now(),
        transition: 'discarded',
        detail: 'by=operator reason=seen it',
      });
      assert.deepEqual(await s.q.show(dead.jobId), discarded);
      assert.equal((await s.q.list({ scope: acme, state: JobState.Dead })).jobs.length, 0);
      assert.deepEqual(
        (await s.q.list({ scope: acme, state: JobState.Cancelled })).jobs.map((j) => j.jobId),
        [dead.jobId],
      );
      assert.deepEqual(await countsOf(s.q), { [JobState.Cancelled]: 1 });
    });

    it('refuses a job that is not Dead, and another tenant', async () => {
      for (const state of ['pending', 'leased', 'completed', 'cancelled'] as const) {
        const job = await jobIn(s.h, acme, state);
        await rejects(s.q.discard(job.jobId), ErrorCode.FailedPrecondition);
        assert.equal((await s.q.show(job.jobId)).state, job.state, `a ${state} job stays`);
      }
      const dead = await jobIn(s.h, acme, 'dead');
      await rejects(s.q.discard(dead.jobId, {}, globex), ErrorCode.NotFound);
      assert.equal((await s.q.show(dead.jobId)).state, JobState.Dead);
    });

    it('leaves the record until retention of cancelled jobs prunes it, counted from the discard', async () => {
      await s.withHarness({ config: { retention: { dead_secs: 60, cancelled_secs: 600 } } });
      const dead = await jobIn(s.h, acme, 'dead');
      s.h.clock.advanceSeconds(30);
      await s.q.discard(dead.jobId);
      s.h.clock.advanceSeconds(590);
      assert.equal(await s.q.maintenance.prune(), 0, 'neither the Dead retention nor the Cancelled one has passed');
      assert.equal((await s.q.show(dead.jobId)).state, JobState.Cancelled);
      s.h.clock.advanceSeconds(11);
      assert.equal(await s.q.maintenance.prune(), 1);
      await rejects(s.q.show(dead.jobId), ErrorCode.NotFound);
    });

    it('can still be retried', async () => {
      const dead = await jobIn(s.h, acme, 'dead');
      await s.q.discard(dead.jobId);
      assert.equal((await s.q.retry(dead.jobId)).state, JobState.Pending);
    });
  });

  describe('run now', () => {
    it('makes a delayed job ready at once, keeping its place and attempts', async () => {
      const { job } = await s.q.enqueue({ kind: 'later', delayMs: 3_600_000 }, acme);
      assert.equal(await s.q.leaseNext({ workerId: 'w', scope: acme }), null, 'gated');
      const ready = await s.q.runNow(job.jobId, { by: 'operator' });
      assert.equal(ready.state, JobState.Pending);
      assert.equal(ready.notBefore, null);
      assert.equal(ready.createdAt, job.createdAt);
      assert.deepEqual(ready.events.at(-1), {
        at: s.now(),
        transition: 'run_now',
        detail: `not_before=${job.notBefore} by=operator`,
      });
      assert.equal((await s.q.leaseNext({ workerId: 'w', scope: acme }))?.jobId, job.jobId);
      assert.equal(await s.h.store.nextGateAt({ type: 'any' }, s.now()), null, 'no gate left to wake for');
    });

    it('skips the backoff of a failed job without resetting its attempts', async () => {
      const { job } = await s.q.enqueue({ kind: 'flaky' }, acme);
      const leased = await s.lease(acme);
      assert.equal(leased.jobId, job.jobId);
      const failed = await s.q.fail(leased.jobId, fenceOf(leased), { error: 'boom' });
      assert.ok(failed.notBefore !== null && failed.notBefore > s.now());
      const ready = await s.q.runNow(job.jobId);
      assert.equal(ready.attempts, 1);
      const again = await s.lease(acme);
      assert.equal(again.jobId, job.jobId);
      assert.equal(again.leaseGeneration, leased.leaseGeneration + 1);
    });

    it('refuses a job that is ready already, or not Pending, and another tenant', async () => {
      const ready = await jobIn(s.h, acme, 'pending');
      await rejects(s.q.runNow(ready.jobId), ErrorCode.FailedPrecondition);
      for (const state of ['leased', 'completed', 'dead', 'cancelled'] as const) {
        const job = await jobIn(s.h, acme, state);
        await rejects(s.q.runNow(job.jobId), ErrorCode.FailedPrecondition);
      }
      const { job } = await s.q.enqueue({ kind: 'later', delayMs: 60_000 }, acme);
      await rejects(s.q.runNow(job.jobId, {}, globex), ErrorCode.NotFound);
      s.h.clock.advance(61 * SECOND);
      await rejects(s.q.runNow(job.jobId), ErrorCode.FailedPrecondition, (e) =>
        assert.match(e.message, /already ready/),
      );
    });
  });
}
