/** Conformance cases: fail, backoff and dead-lettering. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANY_SCOPE, JobState } from '../../core/types.ts';
import { fenceOf, jobIn } from './harness.ts';
import { acme, SECOND, ErrorCode, rejects, type Suite } from './context.ts';

export function failureCases(s: Suite): void {
  describe('fail, backoff and dead-lettering', () => {
    // The formula min(base * factor^(attempts-1), cap) gives 10 * 4^4 = 2,560 s at the fifth attempt;
    // the cap applies from the sixth.
    it('backs off by min(base * factor^(attempts-1), cap): 10, 40, 160, 640, 2,560, then the 3,600 s cap', async () => {
      await s.withHarness({ config: { jobs: { max_attempts: 10 } } });
      const { job } = await s.q.enqueue({ kind: 'k' }, acme);
      const gates: number[] = [];
      for (let i = 0; i < 6; i++) {
        const leased = await s.lease(acme);
        const failed = await s.q.fail(job.jobId, fenceOf(leased), { error: `try ${i}` });
        assert.equal(failed.state, JobState.Pending);
        assert.equal(failed.attempts, i + 1);
        gates.push(((failed.notBefore ?? 0) - s.now()) / SECOND);
        assert.equal(await s.q.leaseNext({ workerId: 'w1', scope: acme }), null, 'gated until the backoff passes');
        s.h.clock.set(failed.notBefore ?? 0);
      }
      assert.deepEqual(gates, [10, 40, 160, 640, 2_560, 3_600]);
    });

    it('dead-letters when attempts reach jobs.max_attempts', async () => {
      await s.withHarness({ config: { jobs: { max_attempts: 2 } } });
      const { job } = await s.q.enqueue({ kind: 'k' }, acme);
      let leased = await s.lease(acme);
      await s.q.fail(job.jobId, fenceOf(leased), { error: 'one' });
      s.h.clock.advanceSeconds(10);
      leased = await s.lease(acme);
      const dead = await s.q.fail(job.jobId, fenceOf(leased), { error: 'two' });
      assert.equal(dead.state, JobState.Dead);
      assert.equal(dead.attempts, 2);
      assert.deepEqual(
        dead.events.slice(-2).map((e) => e.transition),
        ['failed', 'dead'],
      );
      assert.match(dead.events.at(-2)?.detail ?? '', /two$/);
    });

    it('dead-letters at once on a non-retryable failure', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      const dead = await s.q.fail(job.jobId, fenceOf(job), { error: 'bad input', permanent: true });
      assert.equal(dead.state, JobState.Dead);
      assert.equal(dead.attempts, 1);
    });

    it("lets a job's own max_attempts override the global ceiling", async () => {
      const { job } = await s.q.enqueue({ kind: 'k', maxAttempts: 1 }, acme);
      const leased = await s.lease(acme);
      const dead = await s.q.fail(job.jobId, fenceOf(leased), { error: 'once' });
      assert.equal(dead.state, JobState.Dead);
      assert.equal(dead.maxAttempts, 1);
    });

    it('paces a kind by its own base, with the base as a floor for the cap', async () => {
      await s.withHarness({
        config: {
          jobs: {
            max_attempts: 10,
            kinds: {
              'clarify:temporal': { backoff_base_secs: 7_200 },
              quick: { backoff_base_secs: 1, backoff_cap_secs: 5 },
            },
          },
        },
      });
      const slow = await s.q.enqueue({ kind: 'clarify:temporal' }, acme);
      let leased = await s.lease(acme);
      let failed = await s.q.fail(slow.job.jobId, fenceOf(leased), { error: 'x' });
      assert.equal(((failed.notBefore ?? 0) - s.now()) / SECOND, 7_200);
      const quick = await s.q.enqueue({ kind: 'quick' }, acme);
      const gates: number[] = [];
      for (let i = 0; i < 3; i++) {
        leased = await s.lease(acme, 'w1', ['quick']);
        failed = await s.q.fail(quick.job.jobId, fenceOf(leased), { error: 'x' });
        gates.push(((failed.notBefore ?? 0) - s.now()) / SECOND);
        s.h.clock.set(failed.notBefore ?? 0);
      }
      assert.deepEqual(gates, [1, 4, 5]);
    });

    it('lets an operator retry a Dead job: Pending, attempts 0, generation kept', async () => {
      const dead = await jobIn(s.h, acme, 'dead');
      const retried = await s.q.retry(dead.jobId);
      assert.equal(retried.state, JobState.Pending);
      assert.equal(retried.attempts, 0);
      assert.equal(retried.notBefore, null);
      assert.equal(retried.leaseGeneration, dead.leaseGeneration);
      assert.equal(retried.events.at(-1)?.transition, 'retried');
      const again = await s.lease(acme, 'w9', [dead.kind]);
      assert.equal(again.leaseGeneration, dead.leaseGeneration + 1);
    });

    it('refuses to retry a job that is not Dead', async () => {
      const pending = await jobIn(s.h, acme, 'pending');
      await rejects(s.q.retry(pending.jobId), ErrorCode.FailedPrecondition);
      const done = await jobIn(s.h, acme, 'completed');
      await rejects(s.q.retry(done.jobId), ErrorCode.FailedPrecondition);
    });

    it('never sets the reserved Failed state', async () => {
      await jobIn(s.h, acme, 'dead');
      const job = await jobIn(s.h, acme, 'leased');
      await s.q.fail(job.jobId, fenceOf(job), { error: 'x' });
      const states = (await s.q.counts()).map((r) => r.state);
      assert.ok(!states.includes(JobState.Failed));
      assert.equal((await s.q.list({ scope: ANY_SCOPE, state: JobState.Failed })).jobs.length, 0);
    });
  });
}
