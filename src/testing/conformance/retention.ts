/** Conformance cases: retention. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState, SYSTEM_SCOPE } from '../../core/types.ts';
import { jobIn } from './harness.ts';
import { acme, ErrorCode, rejects, countsOf, type Suite } from './context.ts';

export function retentionCases(s: Suite): void {
  describe('retention', () => {
    it('prunes Completed and Dead jobs past retention with their id and idempotency entries', async () => {
      await s.withHarness({ config: { retention: { completed_secs: 60, dead_secs: 120 } } });
      const done = await jobIn(s.h, acme, 'completed', { kind: 'k1', idempotencyKey: 'once' });
      const dead = await jobIn(s.h, acme, 'dead', { kind: 'k2' });
      const live = await jobIn(s.h, acme, 'pending', { kind: 'k3' });
      s.h.clock.advanceSeconds(61);
      assert.equal(await s.q.maintenance.prune(), 1);
      await rejects(s.q.show(done.jobId), ErrorCode.NotFound);
      assert.equal((await s.q.show(dead.jobId)).state, JobState.Dead);
      s.h.clock.advanceSeconds(60);
      assert.equal(await s.q.maintenance.prune(), 1);
      await rejects(s.q.show(dead.jobId), ErrorCode.NotFound);
      assert.equal((await s.q.show(live.jobId)).state, JobState.Pending);
      const again = await s.q.enqueue({ kind: 'k1', idempotencyKey: 'once' }, acme);
      assert.equal(again.created, true, 'the key is free once its job is pruned');
      assert.deepEqual(await countsOf(s.q), { [JobState.Pending]: 2 });
    });

    it('runs pruning as a system:prune job in the system scope', async () => {
      await s.withHarness({ config: { retention: { completed_secs: 60 } } });
      const done = await jobIn(s.h, acme, 'completed');
      s.h.clock.advanceSeconds(61);
      await s.q.maintenance.runSystemJobs();
      await rejects(s.q.show(done.jobId), ErrorCode.NotFound);
      const system = await s.q.list({ scope: SYSTEM_SCOPE, state: JobState.Completed });
      assert.equal(system.jobs.length, 1);
      assert.equal(system.jobs[0]?.kind, 'system:prune');
      await s.q.maintenance.runSystemJobs();
      assert.equal((await s.q.list({ scope: SYSTEM_SCOPE })).jobs.length, 1, 'one prune job per interval');
    });
  });
}
