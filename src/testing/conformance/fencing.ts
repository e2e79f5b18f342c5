/** Conformance cases: fencing. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState, type LeaseFence } from '../../core/types.ts';
import { fenceOf, jobIn } from './harness.ts';
import { acme, SECOND, ErrorCode, rejects, conflict, type Suite } from './context.ts';

export function fencingCases(s: Suite): void {
  describe('fencing', () => {
    it('extends the lease by one TTL and folds consecutive heartbeats into one event', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      let latest = job;
      for (let i = 0; i < 1_000; i++) {
        s.h.clock.advanceSeconds(5);
        latest = await s.q.heartbeat(job.jobId, fenceOf(job));
      }
      assert.equal(latest.leaseDeadline, s.now() + s.h.config.jobs.lease_ttl_secs * SECOND);
      assert.deepEqual(
        latest.events.map((e) => e.transition),
        ['enqueued', 'leased', 'extended'],
      );
      assert.match(latest.events[2]?.detail ?? '', /count=1000$/);
    });

    it('rejects every fenced submission from a worker that does not hold the lease (worker_mismatch)', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      const wrong = { workerId: 'intruder', leaseGeneration: job.leaseGeneration };
      await rejects(s.q.complete(job.jobId, wrong), ErrorCode.LeaseConflict, conflict('worker_mismatch'));
      await rejects(s.q.fail(job.jobId, wrong, { error: 'x' }), ErrorCode.LeaseConflict, conflict('worker_mismatch'));
      await rejects(s.q.heartbeat(job.jobId, wrong), ErrorCode.LeaseConflict, conflict('worker_mismatch'));
      await rejects(
        s.q.checkpoint(job.jobId, wrong, Buffer.from('c')),
        ErrorCode.LeaseConflict,
        conflict('worker_mismatch'),
      );
      await rejects(s.q.release(job.jobId, wrong), ErrorCode.LeaseConflict, conflict('worker_mismatch'));
      assert.deepEqual(await s.q.show(job.jobId), job);
    });

    it('rejects the zombie worker after its lease was reaped and re-leased, and accepts the live one', async () => {
      const { job } = await s.q.enqueue({ kind: 'k' }, acme);
      const a = await s.lease(acme, 'worker-a');
      s.h.clock.advanceSeconds(s.h.config.jobs.lease_ttl_secs + 1);
      assert.deepEqual(await s.q.maintenance.reapExpired(), { reaped: 1, dead: 0 });
      s.h.clock.advanceSeconds(3_600);
      const b = await s.lease(acme, 'worker-b');
      assert.equal(b.jobId, job.jobId);
      const stale = fenceOf(a);
      await rejects(s.q.complete(job.jobId, stale), ErrorCode.LeaseConflict, conflict('worker_mismatch'));
      await rejects(
        s.q.fail(job.jobId, stale, { error: 'late' }),
        ErrorCode.LeaseConflict,
        conflict('worker_mismatch'),
      );
      await rejects(s.q.heartbeat(job.jobId, stale), ErrorCode.LeaseConflict, conflict('worker_mismatch'));
      await rejects(
        s.q.checkpoint(job.jobId, stale, Buffer.from('x')),
        ErrorCode.LeaseConflict,
        conflict('worker_mismatch'),
      );
      await rejects(s.q.release(job.jobId, stale), ErrorCode.LeaseConflict, conflict('worker_mismatch'));
      await s.q.heartbeat(job.jobId, fenceOf(b));
      await s.q.checkpoint(job.jobId, fenceOf(b), Buffer.from('ok'));
      const done = await s.q.complete(job.jobId, fenceOf(b));
      assert.equal(done.job.state, JobState.Completed);
    });

    it('rejects a superseded generation when the same worker re-leased the job (generation_superseded)', async () => {
      await s.q.enqueue({ kind: 'k' }, acme);
      const first = await s.lease(acme, 'w1');
      await s.expireAndReap();
      const second = await s.lease(acme, 'w1');
      const stale = fenceOf(first);
      for (const submit of [
        () => s.q.complete(first.jobId, stale),
        () => s.q.fail(first.jobId, stale, { error: 'late' }),
        () => s.q.heartbeat(first.jobId, stale),
        () => s.q.checkpoint(first.jobId, stale, Buffer.from('x')),
        () => s.q.release(first.jobId, stale),
      ]) {
        await rejects(submit(), ErrorCode.LeaseConflict, (e) => {
          conflict('generation_superseded')(e);
          assert.match(e.message, /lease generation 1 superseded by 2/);
        });
      }
      assert.deepEqual(await s.q.show(second.jobId), second);
    });

    it('rejects every fenced submission for a job that is not leased, and says it is not leased', async () => {
      const pending = await jobIn(s.h, acme, 'pending');
      const done = await jobIn(s.h, acme, 'completed');
      const submissions = (jobId: string, fence: LeaseFence): (() => Promise<unknown>)[] => [
        () => s.q.complete(jobId, fence),
        () => s.q.fail(jobId, fence, { error: 'x' }),
        () => s.q.heartbeat(jobId, fence),
        () => s.q.checkpoint(jobId, fence, Buffer.from('x')),
        () => s.q.release(jobId, fence),
      ];
      for (const submit of submissions(pending.jobId, { workerId: 'w1', leaseGeneration: 0 })) {
        await rejects(submit(), ErrorCode.LeaseConflict, (e) => {
          conflict('worker_mismatch')(e);
          assert.match(e.message, /not leased \(state pending\)/);
        });
      }
      for (const submit of submissions(done.jobId, { workerId: 'fixture-worker', leaseGeneration: 1 })) {
        await rejects(submit(), ErrorCode.LeaseConflict, conflict('worker_mismatch'));
      }
      assert.deepEqual(await s.q.show(pending.jobId), pending);
      assert.deepEqual(await s.q.show(done.jobId), done);
    });

    it('reports an unknown job id as not found and a malformed one as invalid', async () => {
      const fence = { workerId: 'w1', leaseGeneration: 1 };
      await rejects(s.q.complete('01890a5d-ac96-774b-bcce-b302099a8057', fence), ErrorCode.NotFound);
      await rejects(s.q.complete('not-a-uuid', fence), ErrorCode.InvalidArgument, (e) =>
        assert.equal(e.field, 'job_id'),
      );
      await rejects(s.q.show('01890a5d-ac96-774b-bcce-b302099a8057'), ErrorCode.NotFound);
    });

    it('stores a checkpoint and extends the lease in the same write', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      s.h.clock.advanceSeconds(20);
      const after = await s.q.checkpoint(job.jobId, fenceOf(job), Buffer.from('seq=7'));
      assert.deepEqual(Buffer.from(after.continuation ?? []), Buffer.from('seq=7'));
      assert.equal(after.leaseDeadline, s.now() + s.h.config.jobs.lease_ttl_secs * SECOND);
      assert.deepEqual(await s.q.show(job.jobId), after);
    });

    it('clears the continuation when the job leaves the lease', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      await s.q.checkpoint(job.jobId, fenceOf(job), Buffer.from('seq=1'));
      const failed = await s.q.fail(job.jobId, fenceOf(job), { error: 'boom' });
      assert.equal(failed.continuation, null);
      assert.equal(failed.workerId, null);
      assert.equal(failed.leaseDeadline, null);
    });
  });
}
