/** Conformance cases: chained enqueue. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState } from '../../core/types.ts';
import { fenceOf, jobIn } from './harness.ts';
import { acme, ErrorCode, rejects, countsOf, type Suite } from './context.ts';

export function chainedCases(s: Suite): void {
  describe('chained enqueue', () => {
    it('completes a job and enqueues its successors in the same scope, in one write', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      const result = await s.q.complete(job.jobId, fenceOf(job), {
        successors: [
          { kind: 'sync:next', payload: Buffer.from('page=2') },
          { kind: 'sync:audit', idempotencyKey: 'audit-1' },
        ],
      });
      assert.equal(result.job.state, JobState.Completed);
      assert.equal(result.successors.length, 2);
      for (const successor of result.successors) {
        assert.equal(successor.created, true);
        assert.equal(successor.job.tenant, 'acme');
        assert.equal((await s.q.show(successor.job.jobId)).state, JobState.Pending);
      }
    });

    it("answers a successor that reuses the completed job's idempotency key with the completed job itself", async () => {
      const job = await jobIn(s.h, acme, 'leased', { kind: 'k', idempotencyKey: 'same' });
      const result = await s.q.complete(job.jobId, fenceOf(job), {
        successors: [{ kind: 'next', idempotencyKey: 'same' }],
      });
      assert.equal(result.successors[0]?.created, false);
      assert.deepEqual(result.successors[0]?.job, result.job);
      assert.equal(result.successors[0]?.job.state, JobState.Completed);
      assert.deepEqual(await countsOf(s.q), { [JobState.Completed]: 1 });
    });

    it('rejects a stale completion together with its chain link', async () => {
      await s.q.enqueue({ kind: 'k' }, acme);
      const stale = await s.lease(acme, 'w1');
      await s.expireAndReap();
      await s.lease(acme, 'w2');
      await rejects(
        s.q.complete(stale.jobId, fenceOf(stale), { successors: [{ kind: 'next' }] }),
        ErrorCode.LeaseConflict,
      );
      assert.deepEqual(await countsOf(s.q), { [JobState.Leased]: 1 });
    });

    it('refuses a bad successor, naming it, and completes nothing', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      await rejects(
        s.q.complete(job.jobId, fenceOf(job), { successors: [{ kind: 'ok' }, { kind: '' }] }),
        ErrorCode.InvalidArgument,
        (e) => assert.equal(e.field, 'successors[1].kind'),
      );
      assert.equal((await s.q.show(job.jobId)).state, JobState.Leased);
    });
  });
}
