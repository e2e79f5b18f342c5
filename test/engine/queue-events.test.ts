/**
 * `queue.events`: what a queue tells listeners in its process, so a test (or
 * a dashboard) waits on a signal instead of polling. Every write that changes
 * a job says so once, with the records as stored; a lease call that parks
 * says so; a listener that throws fails nothing.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { JOB_STATE_NAMES, JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { fenceOf, type Harness } from '../../src/testing/conformance/harness.ts';
import { memoryHarness, rocksHarness } from '../support/backends.ts';
import { lastTransition, parked } from '../support/events.ts';

const acme = tenantScope('acme');

for (const [name, harness] of [
  ['memory', memoryHarness],
  ['rocksdb', rocksHarness],
] as const) {
  describe(`queue events on ${name}`, () => {
    let h: Harness;
    let heard: JobRecord[][];
    beforeEach(async () => {
      h = await harness({ config: { jobs: { lease_ttl_secs: 30, max_attempts: 2 } } });
      heard = [];
      h.queue.events.on('transition', ({ records }) => heard.push([...records]));
    });
    afterEach(() => h.close());

    /** What the writes since the last call said: each record as `transition:state`. */
    const said = (): string[] => {
      const lines = heard.flat().map((r) => `${lastTransition(r)}:${JOB_STATE_NAMES[r.state]}`);
      heard = [];
      return lines;
    };

    it('tells each write of a job once, with the record as stored', async () => {
      const { job } = await h.queue.enqueue({ kind: 'k', idempotencyKey: 'once' }, acme);
      await h.queue.enqueue({ kind: 'k', idempotencyKey: 'once' }, acme);
      assert.deepEqual(said(), ['enqueued:pending'], 'an idempotent repeat writes nothing');
      const leased = await h.queue.leaseNext({ workerId: 'w', scope: acme });
      assert.ok(leased);
      await h.queue.heartbeat(job.jobId, fenceOf(leased));
      await h.queue.checkpoint(job.jobId, fenceOf(leased), Buffer.from('p1'));
      await h.queue.fail(job.jobId, fenceOf(leased), { error: 'later' });
      assert.deepEqual(said(), ['leased:leased', 'extended:leased', 'checkpoint:leased', 'failed:pending']);

      h.clock.advanceSeconds(3_600);
      const again = await h.queue.leaseNext({ workerId: 'w', scope: acme });
      assert.ok(again);
      h.clock.advanceSeconds(31);
      await h.queue.maintenance.reapExpired();
      assert.deepEqual(said(), ['leased:leased', 'dead:dead']);
      await h.queue.retry(job.jobId);
      assert.deepEqual(said(), ['retried:pending']);
      assert.equal(heard.length, 0);
    });

    it('tells the completions of one call together, with the successors they created', async () => {
      await h.queue.enqueueBatch([{ kind: 'a' }, { kind: 'b' }, { kind: 'c' }], acme);
      said();
      const [a, b, c] = await h.queue.lease({ workerId: 'w', scope: acme, limit: 3 });
      assert.ok(a && b && c);
      assert.deepEqual(
        heard.map((records) => records.length),
        [3],
        'one lease call, one event',
      );
      said();
      await h.queue.completeEach([
        { jobId: a.jobId, fence: fenceOf(a) },
        { jobId: b.jobId, fence: { workerId: 'intruder', leaseGeneration: 1 } },
      ]);
      assert.deepEqual(said(), ['completed:completed'], 'a refused item is not told');
      await h.queue.complete(c.jobId, fenceOf(c), { successors: [{ kind: 'next' }] });
      assert.deepEqual(said(), ['completed:completed', 'enqueued:pending']);
      await h.queue.failEach([{ jobId: b.jobId, fence: fenceOf(b), error: 'no', permanent: true }]);
      assert.deepEqual(said(), ['dead:dead']);
    });

    it('tells when a lease call parks to wait for work', async () => {
      const waiting = parked(h.queue);
      const lease = h.queue.lease({ workerId: 'w', scope: acme, waitMs: 60_000 });
      await waiting;
      assert.equal(h.queue.waits.parked, 1);
      await h.queue.enqueue({ kind: 'k' }, acme);
      assert.equal((await lease).length, 1);
    });

    it('does not fail a call whose listener throws: the write is stored', async () => {
      h.queue.events.on('transition', () => {
        throw new Error('a broken listener');
      });
      const { job } = await h.queue.enqueue({ kind: 'k' }, acme);
      assert.equal((await h.queue.show(job.jobId)).state, JobState.Pending);
    });
  });
}
