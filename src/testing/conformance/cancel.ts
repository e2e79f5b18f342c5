/**
 * Conformance cases: cancelling jobs, one by id or every one matching a
 * filter. A Pending job stops being leasable at once; a Leased one is
 * cancelled fenced, so nothing its worker submits afterwards lands.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState } from '../../core/types.ts';
import { observeEach } from '../../engine/observers.ts';
import { fenceOf, jobIn } from './harness.ts';
import { acme, globex, ErrorCode, rejects, conflict, countsOf, type Suite } from './context.ts';

export function cancelCases(s: Suite): void {
  describe('cancel', () => {
    it('cancels a pending job: never leased, and still cancelled after a reopen', async () => {
      const job = await jobIn(s.h, acme, 'pending', { kind: 'k' });
      const cancelled = await s.q.cancel(job.jobId, { by: 'operator', reason: 'not needed' });
      assert.equal(cancelled.state, JobState.Cancelled);
      assert.deepEqual(cancelled.events.at(-1), {
        at: s.now(),
        transition: 'cancelled',
        detail: 'by=operator reason=not needed',
      });
      assert.deepEqual(await s.q.show(job.jobId), cancelled);
      assert.equal(await s.q.leaseNext({ workerId: 'w1', scope: acme }), null);
      assert.deepEqual(await s.q.lease({ workerId: 'w1', limit: 10 }), []);
      // The memory reference does not survive a reopen; durable stores must keep the cancel.
      const queue = s.q.backend === 'memory' ? s.q : await s.h.reopen();
      assert.deepEqual(await queue.show(job.jobId), cancelled);
      assert.equal(await queue.leaseNext({ workerId: 'w1', scope: acme }), null);
    });

    it('cancels a leased job fenced: every later submission of its holder is refused and writes nothing', async () => {
      const job = await jobIn(s.h, acme, 'leased', { kind: 'k' });
      await s.q.checkpoint(job.jobId, fenceOf(job), Buffer.from('seq=1'));
      const cancelled = await s.q.cancel(job.jobId, { by: 'tenant:acme' }, acme);
      assert.equal(cancelled.state, JobState.Cancelled);
      assert.equal(cancelled.leaseGeneration, job.leaseGeneration);
      assert.equal(cancelled.workerId, null);
      assert.equal(cancelled.leaseDeadline, null);
      assert.equal(cancelled.continuation, null);
      assert.equal(
        cancelled.events.at(-1)?.detail,
        `worker=fixture-worker generation=${job.leaseGeneration} by=tenant:acme`,
      );
      const fence = fenceOf(job);
      const refused = conflict('cancelled');
      await rejects(s.q.heartbeat(job.jobId, fence), ErrorCode.LeaseConflict, refused);
      await rejects(s.q.checkpoint(job.jobId, fence, Buffer.from('seq=2')), ErrorCode.LeaseConflict, refused);
      await rejects(s.q.complete(job.jobId, fence), ErrorCode.LeaseConflict, refused);
      await rejects(
        s.q.complete(job.jobId, fence, { successors: [{ kind: 'next' }] }),
        ErrorCode.LeaseConflict,
        refused,
      );
      await rejects(s.q.fail(job.jobId, fence, { error: 'late' }), ErrorCode.LeaseConflict, refused);
      await rejects(s.q.release(job.jobId, fence), ErrorCode.LeaseConflict, refused);
      const [each] = await s.q.completeEach([{ jobId: job.jobId, fence }]);
      assert.ok(each !== undefined && !each.ok);
      await rejects(Promise.reject(each.error), ErrorCode.LeaseConflict, refused);
      assert.deepEqual(await s.q.show(job.jobId), cancelled);
      assert.deepEqual(await countsOf(s.q), { [JobState.Cancelled]: 1 }, 'no successor was created');
      // The reaper has nothing to reclaim: the lease is gone with the cancel.
      s.h.clock.advanceSeconds(s.h.config.jobs.lease_ttl_secs + 1);
      assert.deepEqual(await s.q.maintenance.reapExpired(), { reaped: 0, dead: 0 });
      assert.deepEqual(await s.q.show(job.jobId), cancelled);
    });

    it('refuses to cancel a completed, dead or cancelled job, or one of another scope, changing nothing', async () => {
      for (const state of ['completed', 'dead', 'cancelled'] as const) {
        const job = await jobIn(s.h, acme, state);
        await rejects(s.q.cancel(job.jobId), ErrorCode.FailedPrecondition);
        assert.deepEqual(await s.q.show(job.jobId), job);
      }
      const foreign = await jobIn(s.h, globex, 'pending');
      await rejects(s.q.cancel(foreign.jobId, {}, acme), ErrorCode.NotFound);
      assert.deepEqual(await s.q.show(foreign.jobId), foreign);
      await rejects(s.q.cancel('not-a-uuid'), ErrorCode.InvalidArgument);
      await rejects(s.q.cancel('01a22b9c-0b3f-75cf-b38e-00434c789a13'), ErrorCode.NotFound);
    });

    it('cancels every job matching a kind prefix and a state, and leaves other scopes untouched', async () => {
      const pending = [
        await jobIn(s.h, acme, 'pending', { kind: 'mail.send' }),
        await jobIn(s.h, acme, 'pending', { kind: 'mail.digest' }),
      ];
      const leased = await jobIn(s.h, acme, 'leased', { kind: 'mail.bulk' });
      const otherKind = await jobIn(s.h, acme, 'pending', { kind: 'report' });
      const done = await jobIn(s.h, acme, 'completed', { kind: 'mail.done' });
      const otherScope = await jobIn(s.h, globex, 'pending', { kind: 'mail.send' });

      assert.equal(await s.q.cancelMatching({ scope: acme, kindPrefix: 'mail.', states: [JobState.Pending] }), 2);
      for (const job of pending) assert.equal((await s.q.show(job.jobId)).state, JobState.Cancelled);
      assert.deepEqual(await s.q.show(leased.jobId), leased, 'a state filter of pending leaves leased jobs');
      assert.equal(await s.q.cancelMatching({ scope: acme, kindPrefix: 'mail.' }), 1);
      const cancelledLease = await s.q.show(leased.jobId);
      assert.equal(cancelledLease.state, JobState.Cancelled);
      await rejects(s.q.heartbeat(leased.jobId, fenceOf(leased)), ErrorCode.LeaseConflict, conflict('cancelled'));
      for (const job of [otherKind, done, otherScope]) assert.deepEqual(await s.q.show(job.jobId), job);
      assert.equal(await s.q.cancelMatching({ scope: acme, kindPrefix: 'mail.' }), 0, 'nothing left to cancel');
      await rejects(s.q.cancelMatching({ scope: acme, states: [JobState.Completed] }), ErrorCode.InvalidArgument);
    });

    it('refuses to cancel across every scope without a kind prefix, and changes nothing', async () => {
      const job = await jobIn(s.h, acme, 'pending');
      await rejects(s.q.cancelMatching({}), ErrorCode.InvalidArgument, (error) =>
        assert.match(error.message, /kind_prefix/),
      );
      await rejects(s.q.cancelMatching({ kindPrefix: '' }), ErrorCode.InvalidArgument);
      assert.deepEqual(await s.q.show(job.jobId), job);
    });

    it('cancels matching jobs across pages, up to a limit', async () => {
      for (let i = 0; i < 130; i++) await s.q.enqueue({ kind: 'bulk' }, acme);
      assert.equal(await s.q.cancelMatching({ scope: acme, kindPrefix: 'bulk', limit: 120 }), 120);
      assert.deepEqual(await countsOf(s.q, acme), { [JobState.Pending]: 10, [JobState.Cancelled]: 120 });
      assert.equal(await s.q.cancelMatching({ kindPrefix: 'bulk' }), 10);
      assert.deepEqual(await countsOf(s.q, acme), { [JobState.Cancelled]: 130 });
    });

    it('retries a cancelled job back to pending, leasable again with a fresh generation', async () => {
      const job = await jobIn(s.h, acme, 'leased', { kind: 'k' });
      await s.q.cancel(job.jobId);
      const retried = await s.q.retry(job.jobId);
      assert.equal(retried.state, JobState.Pending);
      assert.equal(retried.attempts, 0);
      assert.equal(retried.events.at(-1)?.transition, 'retried');
      const again = await s.lease(acme, 'w2');
      assert.equal(again.jobId, job.jobId);
      assert.equal(again.leaseGeneration, job.leaseGeneration + 1);
      await rejects(s.q.complete(job.jobId, fenceOf(job)), ErrorCode.LeaseConflict, conflict('worker_mismatch'));
    });

    it('counts and lists cancelled jobs by their state', async () => {
      const a = await jobIn(s.h, acme, 'cancelled', { kind: 'a' });
      const b = await jobIn(s.h, acme, 'cancelled', { kind: 'b' });
      await jobIn(s.h, acme, 'pending', { kind: 'a' });
      await jobIn(s.h, globex, 'cancelled', { kind: 'a' });
      assert.deepEqual(await s.q.counts(acme), [
        { state: JobState.Pending, kind: 'a', count: 1 },
        { state: JobState.Cancelled, kind: 'a', count: 1 },
        { state: JobState.Cancelled, kind: 'b', count: 1 },
      ]);
      const listed = await s.q.list({ scope: acme, state: JobState.Cancelled });
      assert.deepEqual(
        listed.jobs.map((j) => j.jobId),
        [b.jobId, a.jobId],
        'newest first',
      );
      assert.equal((await s.q.list({ state: JobState.Cancelled, kindPrefix: 'a' })).jobs.length, 2);
    });

    it('tells an observer of each cancel with the state before, and of the refusals of a cancelled holder', async () => {
      const pending = await jobIn(s.h, acme, 'pending', { kind: 'seen.a' });
      const leased = await jobIn(s.h, acme, 'leased', { kind: 'seen.b' });
      await jobIn(s.h, acme, 'pending', { kind: 'seen.c' });
      const seen: string[] = [];
      const stop = observeEach(s.q.events, (o) => {
        seen.push(o.type === 'refused' ? `refused ${o.reason}` : `${o.transition} ${o.previous}→${o.record.state}`);
      });
      await s.q.cancel(pending.jobId);
      await s.q.cancel(leased.jobId);
      await rejects(s.q.complete(leased.jobId, fenceOf(leased)), ErrorCode.LeaseConflict);
      await s.q.cancelMatching({ scope: acme, kindPrefix: 'seen.' });
      await s.q.retry(leased.jobId);
      stop();
      const [P, L, C] = [JobState.Pending, JobState.Leased, JobState.Cancelled];
      assert.deepEqual(seen, [
        `cancel ${P}→${C}`,
        `cancel ${L}→${C}`,
        'refused cancelled',
        `cancel ${P}→${C}`,
        `retry ${C}→${P}`,
      ]);
    });

    it('prunes cancelled jobs after retention.cancelled_secs, freeing their idempotency key', async () => {
      await s.withHarness({ config: { retention: { dead_secs: 60, cancelled_secs: 120 } } });
      const cancelled = await jobIn(s.h, acme, 'cancelled', { kind: 'k', idempotencyKey: 'once' });
      const dead = await jobIn(s.h, acme, 'dead', { kind: 'k2' });
      s.h.clock.advanceSeconds(61);
      assert.equal(await s.q.maintenance.prune(), 1);
      await rejects(s.q.show(dead.jobId), ErrorCode.NotFound);
      assert.equal((await s.q.show(cancelled.jobId)).state, JobState.Cancelled);
      s.h.clock.advanceSeconds(60);
      assert.equal(await s.q.maintenance.prune(), 1);
      await rejects(s.q.show(cancelled.jobId), ErrorCode.NotFound);
      assert.equal((await s.q.enqueue({ kind: 'k', idempotencyKey: 'once' }, acme)).created, true);
      assert.deepEqual(await countsOf(s.q), { [JobState.Pending]: 1 });
    });
  });
}
