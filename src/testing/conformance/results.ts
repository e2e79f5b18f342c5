/** Conformance cases: a completion's result and an attempt's progress. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState, type JobRecord } from '../../core/types.ts';
import type { Queue } from '../../engine/queue.ts';
import { fenceOf, jobIn } from './harness.ts';
import { acme, conflict, ErrorCode, rejects, SECOND, type Suite } from './context.ts';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

export function resultCases(s: Suite): void {
  /** The queue to read back from: the store reopened when it is durable, so what is read is what was written. */
  const reopened = async (): Promise<Queue> => (s.h.store.backend === 'memory' ? s.q : s.h.reopen());

  describe('results', () => {
    it('stores the result with the completion and shows it after a reopen', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      const done = await s.q.complete(job.jobId, fenceOf(job), { result: bytes('{"sent":3}') });
      assert.equal(done.job.state, JobState.Completed);
      assert.deepEqual(Buffer.from(done.job.result ?? []).toString(), '{"sent":3}');
      const shown = await (await reopened()).show(job.jobId);
      assert.equal(Buffer.from(shown.result ?? []).toString(), '{"sent":3}');
      assert.equal(shown.state, JobState.Completed);
    });

    it('stores no result for a completion without one', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      await s.q.complete(job.jobId, fenceOf(job));
      assert.equal((await s.q.show(job.jobId)).result, null);
    });

    it('refuses a stale worker’s completion with a result and writes nothing', async () => {
      const { job } = await s.q.enqueue({ kind: 'k' }, acme);
      const a = await s.lease(acme, 'worker-a');
      await s.expireAndReap();
      const b = await s.lease(acme, 'worker-b');
      await rejects(
        s.q.complete(job.jobId, fenceOf(a), { result: bytes('"late"') }),
        ErrorCode.LeaseConflict,
        conflict('worker_mismatch'),
      );
      assert.deepEqual(await s.q.show(job.jobId), b);
      const done = await s.q.complete(job.jobId, fenceOf(b), { result: bytes('"live"') });
      assert.equal(Buffer.from(done.job.result ?? []).toString(), '"live"');
    });

    it('refuses a result over jobs.max_result_bytes, naming result, and keeps the lease', async () => {
      await s.withHarness({ config: { jobs: { max_result_bytes: 8 } } });
      const job = await jobIn(s.h, acme, 'leased');
      await rejects(
        s.q.complete(job.jobId, fenceOf(job), { result: new Uint8Array(9) }),
        ErrorCode.InvalidArgument,
        (e) => assert.equal(e.field, 'result'),
      );
      assert.deepEqual(await s.q.show(job.jobId), job);
      const done = await s.q.complete(job.jobId, fenceOf(job), { result: new Uint8Array(8) });
      assert.equal(done.job.result?.byteLength, 8);
    });

    it('stores each completion’s own result in completeEach, and refuses an oversize one alone', async () => {
      await s.withHarness({ config: { jobs: { max_result_bytes: 8 } } });
      const [first, second, third] = [
        await jobIn(s.h, acme, 'leased'),
        await jobIn(s.h, acme, 'leased'),
        await jobIn(s.h, acme, 'leased'),
      ] as [JobRecord, JobRecord, JobRecord];
      const results = await s.q.completeEach([
        { jobId: first.jobId, fence: fenceOf(first), result: bytes('1') },
        { jobId: second.jobId, fence: fenceOf(second), result: new Uint8Array(9) },
        { jobId: third.jobId, fence: fenceOf(third) },
      ]);
      assert.deepEqual(
        results.map((r) => r.ok),
        [true, false, true],
      );
      const refused = results[1];
      assert.ok(refused !== undefined && !refused.ok);
      assert.equal((refused.error as { field?: string }).field, 'result');
      assert.equal(Buffer.from((await s.q.show(first.jobId)).result ?? []).toString(), '1');
      assert.deepEqual(await s.q.show(second.jobId), second);
      assert.equal((await s.q.show(third.jobId)).result, null);
    });

    it('stores the result of a completion that enqueues successors', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      const done = await s.q.completeEach([
        { jobId: job.jobId, fence: fenceOf(job), successors: [{ kind: 'next' }], result: bytes('"chained"') },
      ]);
      assert.ok(done[0]?.ok);
      assert.equal(Buffer.from((await s.q.show(job.jobId)).result ?? []).toString(), '"chained"');
    });
  });

  describe('progress', () => {
    it('stores progress with a heartbeat, extends the lease and folds repeats into one event', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      s.h.clock.advanceSeconds(5);
      await s.q.heartbeat(job.jobId, fenceOf(job), { progress: '0.25' });
      s.h.clock.advanceSeconds(5);
      const latest = await s.q.heartbeat(job.jobId, fenceOf(job), { progress: '{"done":3,"of":4}' });
      assert.equal(latest.progress, '{"done":3,"of":4}');
      assert.equal(latest.leaseDeadline, s.now() + s.h.config.jobs.lease_ttl_secs * SECOND);
      assert.deepEqual(
        latest.events.map((e) => e.transition),
        ['enqueued', 'leased', 'progress'],
      );
      assert.equal(latest.events[2]?.detail, `generation=${job.leaseGeneration} count=2`);
      assert.deepEqual(await s.q.show(job.jobId), latest);
    });

    it('keeps the last progress when the job completes, and clears it at the next lease', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      await s.q.heartbeat(job.jobId, fenceOf(job), { progress: '{"step":"upload"}' });
      await s.q.heartbeat(job.jobId, fenceOf(job));
      const failed = await s.q.fail(job.jobId, fenceOf(job), { error: 'boom' });
      assert.equal(failed.progress, '{"step":"upload"}');
      s.h.clock.advanceSeconds(3_600);
      const again = await s.lease(acme, 'w2', [job.kind]);
      assert.equal(again.jobId, job.jobId);
      assert.equal(again.progress, null);
      await s.q.heartbeat(again.jobId, fenceOf(again), { progress: '1' });
      const done = await s.q.complete(again.jobId, fenceOf(again));
      assert.equal((await (await reopened()).show(done.job.jobId)).progress, '1');
    });

    it('refuses a stale worker’s progress and writes nothing', async () => {
      const { job } = await s.q.enqueue({ kind: 'k' }, acme);
      const a = await s.lease(acme, 'worker-a');
      await s.expireAndReap();
      const b = await s.lease(acme, 'worker-b');
      await rejects(
        s.q.heartbeat(job.jobId, fenceOf(a), { progress: '0.5' }),
        ErrorCode.LeaseConflict,
        conflict('worker_mismatch'),
      );
      assert.deepEqual(await s.q.show(job.jobId), b);
    });

    for (const [what, progress] of [
      ['progress over 4,096 characters', JSON.stringify('x'.repeat(4_095))],
      ['progress that is not JSON text', '{done: 1}'],
    ] as const) {
      it(`refuses ${what}, naming progress, and writes nothing`, async () => {
        const job = await jobIn(s.h, acme, 'leased');
        await rejects(s.q.heartbeat(job.jobId, fenceOf(job), { progress }), ErrorCode.InvalidArgument, (e) =>
          assert.equal(e.field, 'progress'),
        );
        assert.deepEqual(await s.q.show(job.jobId), job);
      });
    }
  });
}
