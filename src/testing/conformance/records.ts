/** Conformance cases: bounded records. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_EVENTS } from '../../core/bounds.ts';
import { fenceOf } from './harness.ts';
import { acme, type Suite } from './context.ts';

export function recordCases(s: Suite): void {
  describe('bounded records', () => {
    it('keeps at most MAX_EVENTS events through endless fail and retry cycles, folding the oldest into stats', async () => {
      await s.withHarness({ config: { jobs: { max_attempts: 1 } } });
      const { job } = await s.q.enqueue({ kind: 'k' }, acme);
      for (let i = 0; i < 60; i++) {
        const leased = await s.lease(acme);
        await s.q.checkpoint(job.jobId, fenceOf(leased), Buffer.from('c'));
        await s.q.fail(job.jobId, fenceOf(leased), { error: 'e'.repeat(5_000) });
        await s.q.retry(job.jobId);
      }
      const record = await s.q.show(job.jobId);
      assert.equal(record.events.length, MAX_EVENTS);
      assert.equal(record.events[0]?.transition, 'enqueued');
      assert.equal(record.events[1]?.transition, 'stats');
      assert.match(record.events[1]?.detail ?? '', /dropped=\d+/);
      assert.ok(record.events.every((e) => (e.detail ?? '').length <= 1_100));
    });
  });
}
