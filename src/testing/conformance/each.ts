/** Conformance cases: batch completion, failure and enqueue. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LeaseConflictError, TelhaError } from '../../core/errors.ts';
import { MAX_BATCH_JOBS } from '../../core/bounds.ts';
import { JobState, type ItemResult } from '../../core/types.ts';
import { fenceOf, jobIn } from './harness.ts';
import { acme, globex, SECOND, ErrorCode, rejects, countsOf, type Suite } from './context.ts';

export function eachCases(s: Suite): void {
  describe('batch completion, failure and enqueue', () => {
    /** The error of a failed item, checked to be a TelhaError with `code`. */
    function failedWith(result: ItemResult<unknown> | undefined, code: ErrorCode): TelhaError {
      assert.ok(result !== undefined && !result.ok, 'expected the item to fail');
      assert.ok(result.error instanceof TelhaError, `expected a TelhaError, got ${String(result.error)}`);
      assert.equal(result.error.code, code, result.error.message);
      return result.error;
    }

    it('answers each item on its own: the valid ones are applied, the rest change nothing', async () => {
      const good = [await jobIn(s.h, acme, 'leased'), await jobIn(s.h, acme, 'leased')];
      const stale = await jobIn(s.h, acme, 'leased');
      const foreign = await jobIn(s.h, globex, 'leased');
      const results = await s.q.completeEach(
        [
          { jobId: good[0]!.jobId, fence: fenceOf(good[0]!) },
          { jobId: stale.jobId, fence: { ...fenceOf(stale), leaseGeneration: stale.leaseGeneration + 1 } },
          { jobId: '0190a0a0-0000-7000-8000-000000000000', fence: fenceOf(good[1]!) },
          { jobId: 'not-a-uuid', fence: fenceOf(good[1]!) },
          { jobId: foreign.jobId, fence: fenceOf(foreign) },
          { jobId: good[1]!.jobId, fence: fenceOf(good[1]!) },
        ],
        acme,
      );
      assert.equal(results.length, 6);
      for (const i of [0, 5]) {
        const result = results[i];
        assert.ok(result?.ok);
        assert.equal(result.value.job.state, JobState.Completed);
        assert.deepEqual(await s.q.show(result.value.job.jobId), result.value.job);
      }
      const conflictError = failedWith(results[1], ErrorCode.LeaseConflict);
      assert.ok(conflictError instanceof LeaseConflictError);
      assert.equal(conflictError.reason, 'generation_superseded');
      failedWith(results[2], ErrorCode.NotFound);
      assert.equal(failedWith(results[3], ErrorCode.InvalidArgument).field, 'job_id');
      // Another tenant's job reads as unknown, and stays leased.
      failedWith(results[4], ErrorCode.NotFound);
      assert.deepEqual(await s.q.show(stale.jobId), stale);
      assert.deepEqual(await s.q.show(foreign.jobId), foreign);
    });

    it("rejects a zombie's batch after its lease was reaped and re-leased, and accepts the live worker's", async () => {
      const { job } = await s.q.enqueue({ kind: 'k' }, acme);
      const a = await s.lease(acme, 'worker-a');
      s.h.clock.advanceSeconds(s.h.config.jobs.lease_ttl_secs + 1);
      await s.q.maintenance.reapExpired();
      s.h.clock.advanceSeconds(3_600);
      const b = await s.lease(acme, 'worker-a');
      const [late] = await s.q.completeEach([{ jobId: job.jobId, fence: fenceOf(a) }]);
      assert.equal((failedWith(late, ErrorCode.LeaseConflict) as LeaseConflictError).reason, 'generation_superseded');
      const [lateFail] = await s.q.failEach([{ jobId: job.jobId, fence: fenceOf(a), error: 'late' }]);
      failedWith(lateFail, ErrorCode.LeaseConflict);
      assert.equal((await s.q.show(job.jobId)).leaseGeneration, b.leaseGeneration);
      const [live] = await s.q.completeEach([{ jobId: job.jobId, fence: fenceOf(b) }]);
      assert.ok(live?.ok);
      assert.equal((await s.q.show(job.jobId)).state, JobState.Completed);
    });

    it('applies items naming the same job in order, each seeing the one before', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      const results = await s.q.completeEach([
        { jobId: job.jobId, fence: fenceOf(job) },
        { jobId: job.jobId, fence: fenceOf(job) },
      ]);
      assert.ok(results[0]?.ok);
      failedWith(results[1], ErrorCode.LeaseConflict);
      const stored = await s.q.show(job.jobId);
      assert.equal(stored.state, JobState.Completed);
      assert.deepEqual(
        stored.events.map((e) => e.transition),
        ['enqueued', 'leased', 'completed'],
      );
      assert.deepEqual(await countsOf(s.q), { [JobState.Completed]: 1 });
    });

    it('runs a completion with successors beside the plain ones, creating them in its own write', async () => {
      const plain = await jobIn(s.h, acme, 'leased');
      const chained = await jobIn(s.h, acme, 'leased');
      const results = await s.q.completeEach([
        { jobId: plain.jobId, fence: fenceOf(plain) },
        { jobId: chained.jobId, fence: fenceOf(chained), successors: [{ kind: 'next', idempotencyKey: 'n-1' }] },
      ]);
      assert.ok(results[0]?.ok && results[1]?.ok);
      assert.deepEqual(results[0].value.successors, []);
      const [successor] = results[1].value.successors;
      assert.ok(successor?.created);
      assert.equal(successor.job.tenant, 'acme');
      assert.equal((await s.q.show(successor.job.jobId)).state, JobState.Pending);
      assert.deepEqual(await countsOf(s.q), { [JobState.Pending]: 1, [JobState.Completed]: 2 });
    });

    it('fails each item as fail would: retry with backoff, dead-letter, and a bad error field for its item only', async () => {
      const retry = await jobIn(s.h, acme, 'leased');
      const permanent = await jobIn(s.h, acme, 'leased');
      const malformed = await jobIn(s.h, acme, 'leased');
      const results = await s.q.failEach([
        { jobId: retry.jobId, fence: fenceOf(retry), error: 'timeout' },
        { jobId: permanent.jobId, fence: fenceOf(permanent), error: 'bad input', permanent: true },
        { jobId: malformed.jobId, fence: fenceOf(malformed), error: 42 as unknown as string },
      ]);
      assert.ok(results[0]?.ok && results[1]?.ok);
      assert.equal(results[0].value.state, JobState.Pending);
      assert.equal(results[0].value.attempts, 1);
      assert.equal(results[0].value.notBefore, s.now() + 10 * SECOND);
      assert.equal(results[1].value.state, JobState.Dead);
      assert.equal(failedWith(results[2], ErrorCode.InvalidArgument).field, 'error');
      assert.deepEqual(await s.q.show(retry.jobId), results[0].value);
      assert.deepEqual(await s.q.show(malformed.jobId), malformed);
      // The retried job is leasable again once its gate opens.
      s.h.clock.advanceSeconds(10);
      assert.equal((await s.lease(acme, 'w2')).jobId, retry.jobId);
    });

    it('enqueues each job on its own: a bad one fails alone, a repeated key names the first', async () => {
      const results = await s.q.enqueueEach(
        [
          { kind: 'a' },
          { kind: '' },
          { kind: 'b', idempotencyKey: 'x' },
          { kind: 'b', idempotencyKey: 'x' },
          { kind: 'c', priority: 256 },
        ],
        acme,
      );
      assert.ok(results[0]?.ok && results[2]?.ok && results[3]?.ok);
      assert.equal(results[0].value.created, true);
      assert.equal(failedWith(results[1], ErrorCode.InvalidArgument).field, 'kind');
      assert.equal(results[2].value.created, true);
      assert.equal(results[3].value.created, false);
      assert.equal(results[3].value.job.jobId, results[2].value.job.jobId);
      assert.equal(failedWith(results[4], ErrorCode.InvalidArgument).field, 'priority');
      assert.deepEqual(await countsOf(s.q), { [JobState.Pending]: 2 });
      assert.equal((await s.lease(acme)).jobId, results[0].value.job.jobId);
      const tooMany = Array.from({ length: MAX_BATCH_JOBS + 1 }, () => ({ kind: 'k' }));
      await rejects(s.q.enqueueEach(tooMany, acme), ErrorCode.InvalidArgument, (e) => assert.equal(e.field, 'jobs'));
    });

    it('refuses a batch above the limit as a whole', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      const items = Array.from({ length: MAX_BATCH_JOBS + 1 }, () => ({ jobId: job.jobId, fence: fenceOf(job) }));
      await rejects(s.q.completeEach(items), ErrorCode.InvalidArgument);
      assert.equal((await s.q.show(job.jobId)).state, JobState.Leased);
    });
  });
}
