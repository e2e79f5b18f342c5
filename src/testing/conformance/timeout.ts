/** Conformance cases: the job timeout, the longest one attempt may run whatever its heartbeats. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState } from '../../core/types.ts';
import { fenceOf, jobIn } from './harness.ts';
import { acme, conflict, ErrorCode, rejects, SECOND, type Suite } from './context.ts';

export function timeoutCases(s: Suite): void {
  describe('job timeouts', () => {
    it("a job's own timeout caps the lease and outlasts no heartbeat; the reaper takes it back with detail timeout", async () => {
      // 45 s with a 30 s TTL: the first lease runs its full TTL, a heartbeat may extend it only to 45 s.
      const job = await jobIn(s.h, acme, 'leased', { kind: 'k', timeoutSecs: 45 });
      const start = s.now();
      assert.equal(job.timeoutSecs, 45);
      assert.equal(job.attemptDeadline, start + 45 * SECOND);
      assert.equal(job.leaseDeadline, start + s.h.config.jobs.lease_ttl_secs * SECOND);

      s.h.clock.advanceSeconds(20);
      const extended = await s.q.heartbeat(job.jobId, fenceOf(job));
      assert.equal(extended.leaseDeadline, start + 45 * SECOND, 'a heartbeat never extends past the attempt deadline');
      const checkpointed = await s.q.checkpoint(job.jobId, fenceOf(job), Buffer.from('half'));
      assert.equal(checkpointed.leaseDeadline, start + 45 * SECOND);

      s.h.clock.advanceSeconds(24);
      assert.deepEqual(await s.q.maintenance.reapExpired(), { reaped: 0, dead: 0 }, 'not before its time');
      s.h.clock.advanceSeconds(1);
      assert.deepEqual(await s.q.maintenance.reapExpired(), { reaped: 1, dead: 0 });

      const reaped = await s.q.show(job.jobId);
      assert.equal(reaped.state, JobState.Pending);
      assert.equal(reaped.attempts, 1);
      assert.equal(reaped.attemptDeadline, null, 'the deadline belongs to the attempt');
      assert.equal(reaped.timeoutSecs, 45, "the job's setting stays for its next attempt");
      const last = reaped.events.at(-1);
      assert.equal(last?.transition, 'reaped');
      assert.match(last?.detail ?? '', / timeout$/);
      await rejects(s.q.heartbeat(job.jobId, fenceOf(job)), ErrorCode.LeaseConflict, conflict('worker_mismatch'));
    });

    it('a timeout shorter than the TTL ends the first lease early, and every attempt gets its own clock', async () => {
      const job = await jobIn(s.h, acme, 'leased', { kind: 'k', timeoutSecs: 5 });
      const start = s.now();
      assert.equal(job.leaseDeadline, start + 5 * SECOND);
      s.h.clock.advanceSeconds(5);
      assert.deepEqual(await s.q.maintenance.reapExpired(), { reaped: 1, dead: 0 });
      s.h.clock.advanceSeconds(3_600);
      const again = await s.lease(acme, 'w2');
      assert.equal(again.jobId, job.jobId);
      assert.equal(again.attemptDeadline, s.now() + 5 * SECOND);
      assert.equal(again.leaseDeadline, s.now() + 5 * SECOND);
    });

    it('a kind timeout from jobs.kinds applies to jobs that set none, and a job of its own wins', async () => {
      await s.withHarness({ config: { jobs: { kinds: { 'report.': { timeout_secs: 10 } } } } });
      const byKind = await jobIn(s.h, acme, 'leased', { kind: 'report.monthly' });
      assert.equal(byKind.timeoutSecs, null);
      assert.equal(byKind.attemptDeadline, s.now() + 10 * SECOND);
      const own = await jobIn(s.h, acme, 'leased', { kind: 'report.weekly', timeoutSecs: 20 });
      assert.equal(own.attemptDeadline, s.now() + 20 * SECOND);
      const other = await jobIn(s.h, acme, 'leased', { kind: 'mail' });
      assert.equal(other.attemptDeadline, null, 'no timeout: only the lease TTL applies');
      assert.equal(other.leaseDeadline, s.now() + s.h.config.jobs.lease_ttl_secs * SECOND);
    });

    it('the last attempt timing out dead-letters the job, saying so', async () => {
      const job = await jobIn(s.h, acme, 'leased', { kind: 'k', timeoutSecs: 1, maxAttempts: 1 });
      s.h.clock.advanceSeconds(1);
      assert.deepEqual(await s.q.maintenance.reapExpired(), { reaped: 1, dead: 1 });
      const dead = await s.q.show(job.jobId);
      assert.equal(dead.state, JobState.Dead);
      assert.equal(dead.events.at(-1)?.detail, 'timed out on the last attempt');
    });

    it('leaving the lease clears the attempt deadline', async () => {
      const done = await jobIn(s.h, acme, 'leased', { kind: 'a', timeoutSecs: 60 });
      const completed = await s.q.complete(done.jobId, fenceOf(done));
      assert.equal(completed.job.attemptDeadline, null);
      const failed = await jobIn(s.h, acme, 'leased', { kind: 'b', timeoutSecs: 60 });
      assert.equal(
        (await s.q.fail(failed.jobId, fenceOf(failed), { error: 'x', permanent: false })).attemptDeadline,
        null,
      );
      const released = await jobIn(s.h, acme, 'leased', { kind: 'c', timeoutSecs: 60 });
      assert.equal((await s.q.release(released.jobId, fenceOf(released))).attemptDeadline, null);
    });

    for (const [name, timeoutSecs] of [
      ['zero', 0],
      ['negative', -5],
      ['fractional', 1.5],
      ['over ten years', 315_360_001],
    ] as const) {
      it(`refuses a ${name} timeout_secs, naming the field, and writes nothing`, async () => {
        await rejects(s.q.enqueue({ kind: 'k', timeoutSecs }, acme), ErrorCode.InvalidArgument, (error) =>
          assert.match(error.message, /timeout_secs/),
        );
        assert.deepEqual(await s.q.counts(acme), []);
      });
    }
  });
}
