/** Conformance cases: the reaper. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState, SYSTEM_SCOPE } from '../../core/types.ts';
import { fenceOf, jobIn } from './harness.ts';
import { acme, SECOND, type Suite } from './context.ts';

export function reaperCases(s: Suite): void {
  describe('the reaper', () => {
    it('reclaims expired leases in every scope, tenant and system, with backoff and a reaped event', async () => {
      const t = await jobIn(s.h, acme, 'leased');
      const system = await jobIn(s.h, SYSTEM_SCOPE, 'leased', { kind: 'system:index' });
      s.h.clock.advanceSeconds(s.h.config.jobs.lease_ttl_secs);
      assert.deepEqual(await s.q.maintenance.reapExpired(), { reaped: 2, dead: 0 });
      for (const id of [t.jobId, system.jobId]) {
        const r = await s.q.show(id);
        assert.equal(r.state, JobState.Pending);
        assert.equal(r.attempts, 1);
        assert.equal(r.workerId, null);
        assert.equal(r.notBefore, s.now() + 10 * SECOND);
        assert.equal(r.events.at(-1)?.transition, 'reaped');
      }
    });

    it('dead-letters a reaped job at the ceiling with reaped and dead events', async () => {
      const job = await jobIn(s.h, acme, 'leased', { kind: 'k', maxAttempts: 1 });
      s.h.clock.advanceSeconds(s.h.config.jobs.lease_ttl_secs + 1);
      assert.deepEqual(await s.q.maintenance.reapExpired(), { reaped: 1, dead: 1 });
      const dead = await s.q.show(job.jobId);
      assert.equal(dead.state, JobState.Dead);
      assert.deepEqual(
        dead.events.slice(-2).map((e) => e.transition),
        ['reaped', 'dead'],
      );
    });

    it('leaves live leases alone, and a heartbeat keeps a lease alive', async () => {
      const job = await jobIn(s.h, acme, 'leased');
      s.h.clock.advanceSeconds(s.h.config.jobs.lease_ttl_secs - 1);
      assert.deepEqual(await s.q.maintenance.reapExpired(), { reaped: 0, dead: 0 });
      await s.q.heartbeat(job.jobId, fenceOf(job));
      s.h.clock.advanceSeconds(s.h.config.jobs.lease_ttl_secs - 1);
      assert.deepEqual(await s.q.maintenance.reapExpired(), { reaped: 0, dead: 0 });
      assert.equal((await s.q.show(job.jobId)).state, JobState.Leased);
    });
  });
}
