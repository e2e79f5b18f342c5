/**
 * Conformance cases: a job's trace context (the producer's W3C `traceparent` and `tracestate`),
 * stored with the job and handed to every attempt, on every store.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState, type TraceContext } from '../../core/types.ts';
import type { Queue } from '../../engine/queue.ts';
import { fenceOf } from './harness.ts';
import { acme, ErrorCode, rejects, type Suite } from './context.ts';

const PRODUCER: TraceContext = {
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  tracestate: 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7',
};
const OTHER: TraceContext = {
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00',
  tracestate: null,
};

export function traceContextCases(s: Suite): void {
  /** The queue to read back from: the store reopened when it is durable, so what is read is what was written. */
  const reopened = async (): Promise<Queue> => (s.h.store.backend === 'memory' ? s.q : s.h.reopen());

  describe('trace context', () => {
    it('keeps a job’s trace context through its leases, a retry and a reopen', async () => {
      const { job } = await s.q.enqueue({ kind: 'traced', traceContext: PRODUCER }, acme);
      assert.deepEqual(job.traceContext, PRODUCER);
      const first = await s.lease(acme);
      assert.deepEqual(first.traceContext, PRODUCER);
      await s.q.fail(first.jobId, fenceOf(first), { error: 'boom' });
      s.h.clock.advanceSeconds(3_600);
      const second = await s.lease(acme);
      assert.equal(second.attempts, 1);
      assert.deepEqual(second.traceContext, PRODUCER);
      await s.q.complete(second.jobId, fenceOf(second));
      const shown = await (await reopened()).show(job.jobId);
      assert.equal(shown.state, JobState.Completed);
      assert.deepEqual(shown.traceContext, PRODUCER);
    });

    it('stores no trace context for a job enqueued without one', async () => {
      const { job } = await s.q.enqueue({ kind: 'plain' }, acme);
      assert.equal(job.traceContext, null);
      assert.equal((await (await reopened()).show(job.jobId)).traceContext, null);
    });

    it('stores each job’s own trace context in a batch and in a completion’s successors', async () => {
      const [traced, plain] = await s.q.enqueueBatch([{ kind: 'a', traceContext: PRODUCER }, { kind: 'b' }], acme);
      assert.ok(traced !== undefined && plain !== undefined);
      const leased = await s.lease(acme, 'w1', ['a']);
      const done = await s.q.complete(leased.jobId, fenceOf(leased), {
        successors: [{ kind: 'next', traceContext: OTHER }, { kind: 'next' }],
      });
      const q = await reopened();
      assert.deepEqual((await q.show(traced.job.jobId)).traceContext, PRODUCER);
      assert.equal((await q.show(plain.job.jobId)).traceContext, null);
      const successors = await Promise.all(done.successors.map(({ job }) => q.show(job.jobId)));
      assert.deepEqual(
        successors.map((job) => job.traceContext),
        [OTHER, null],
      );
    });

    it('refuses a malformed traceparent, naming the field, and writes nothing', async () => {
      await rejects(
        s.q.enqueueBatch(
          [{ kind: 'ok' }, { kind: 'bad', traceContext: { traceparent: 'not-a-traceparent', tracestate: null } }],
          acme,
        ),
        ErrorCode.InvalidArgument,
        (e) => assert.equal(e.field, 'jobs[1].trace_context.traceparent'),
      );
      assert.equal(await s.q.leaseNext({ workerId: 'w1', scope: acme }), null);
    });
  });
}
