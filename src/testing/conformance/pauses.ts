/** Conformance cases: pause and resume of a kind prefix (`core/pauses.ts`). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANY_SCOPE, JobState, SYSTEM_SCOPE, tenantScope, type JobRecord } from '../../core/types.ts';
import { acme, ErrorCode, globex, rejects, type Suite } from './context.ts';
import { fenceOf } from './harness.ts';

function labels(jobs: readonly (JobRecord | null)[]): (string | null)[] {
  return jobs.map((job) => (job === null ? null : Buffer.from(job.payload).toString()));
}

async function leaseAll(s: Suite, scope = ANY_SCOPE, kinds?: string[]): Promise<string[]> {
  const jobs = await s.q.lease({ workerId: 'w1', scope, limit: 100, ...(kinds ? { kinds } : {}) });
  return labels(jobs) as string[];
}

export function pauseCases(s: Suite): void {
  describe('pause and resume', () => {
    it('holds back a paused prefix in its scope, in key order and in the fleet’s fair order', async () => {
      await s.q.enqueueBatch(
        [
          { kind: 'email:send', payload: 'acme-email-0' },
          { kind: 'report', payload: 'acme-report' },
          { kind: 'email:bulk', payload: 'acme-email-1' },
        ],
        acme,
      );
      await s.q.enqueue({ kind: 'email:send', payload: 'globex-email' }, globex);
      await s.q.pause({ kindPrefix: 'email:', scope: acme });
      // Enqueues are still accepted.
      const late = await s.q.enqueue({ kind: 'email:send', payload: 'acme-email-2' }, acme);
      assert.equal(late.created, true);
      assert.equal(await s.q.leaseNext({ workerId: 'w1', scope: acme, kinds: ['email:'] }), null);
      assert.deepEqual(labels([await s.q.leaseNext({ workerId: 'w1', scope: acme })]), ['acme-report']);
      assert.deepEqual(await leaseAll(s), ['globex-email']);
      await s.q.resume({ kindPrefix: 'email:', scope: acme });
      assert.deepEqual(await leaseAll(s, acme), ['acme-email-0', 'acme-email-1', 'acme-email-2']);
    });

    it('lets leased jobs of a paused prefix finish', async () => {
      await s.q.enqueue({ kind: 'email:send', payload: 'a' }, acme);
      const job = await s.lease(acme);
      await s.q.pause({ kindPrefix: 'email', scope: acme });
      await s.q.heartbeat(job.jobId, fenceOf(job));
      const done = await s.q.complete(job.jobId, fenceOf(job));
      assert.equal(done.job.state, JobState.Completed);
    });

    it('pauses everywhere: every scope’s jobs of the prefix, not system kinds', async () => {
      await s.q.enqueue({ kind: 'sync', payload: 'acme-sync' }, acme);
      await s.q.enqueue({ kind: 'sync', payload: 'globex-sync' }, globex);
      await s.q.enqueue({ kind: 'other', payload: 'acme-other' }, acme);
      await s.q.enqueue({ kind: 'system:sync', payload: 'sys' }, SYSTEM_SCOPE);
      await s.q.pause({ kindPrefix: 's', scope: 'everywhere' });
      assert.deepEqual(await leaseAll(s), ['acme-other']);
      assert.deepEqual(await leaseAll(s, SYSTEM_SCOPE, ['system:']), ['sys']);
      await s.q.resume({ kindPrefix: 's', scope: 'everywhere' });
      assert.deepEqual((await leaseAll(s)).sort(), ['acme-sync', 'globex-sync']);
    });

    it('pauses system kinds only by a system: prefix', async () => {
      await s.q.enqueue({ kind: 'system:prune', payload: 'sys' }, SYSTEM_SCOPE);
      await s.q.pause({ kindPrefix: 'system:', scope: SYSTEM_SCOPE });
      assert.deepEqual(await leaseAll(s, SYSTEM_SCOPE, ['system:']), []);
      await s.q.resume({ kindPrefix: 'system:', scope: SYSTEM_SCOPE });
      assert.deepEqual(await leaseAll(s, ANY_SCOPE, ['system:']), ['sys']);
      await rejects(s.q.pause({ kindPrefix: 'system:x', scope: acme }), ErrorCode.InvalidArgument);
    });

    it('skips many paused jobs and scopes to reach the work behind them', async () => {
      for (const tenant of ['t1', 't2', 't3']) {
        await s.q.enqueueBatch(
          Array.from({ length: 20 }, (_, i) => ({ kind: 'k', payload: `${tenant}-${i}` })),
          tenantScope(tenant),
        );
        await s.q.pause({ kindPrefix: 'k', scope: tenantScope(tenant) });
      }
      await s.q.enqueue({ kind: 'k', payload: 'acme' }, acme);
      assert.deepEqual(await leaseAll(s), ['acme']);
      assert.deepEqual(labels([await s.q.leaseNext({ workerId: 'w1', scope: ANY_SCOPE })]), [null]);
    });

    it('lists pauses, is idempotent, and resume of what is not paused is not_found', async () => {
      const first = await s.q.pause({ kindPrefix: 'a', scope: acme, by: 'alice' });
      const again = await s.q.pause({ kindPrefix: 'a', scope: acme, by: 'bob' });
      assert.deepEqual(again, first);
      await s.q.pause({ kindPrefix: 'b', scope: globex });
      await s.q.pause({ kindPrefix: 'c', scope: 'everywhere' });
      assert.deepEqual(
        (await s.q.pauses(acme)).map((p) => [p.scope, p.kindPrefix, p.by]),
        [
          ['everywhere', 'c', 'local'],
          [acme, 'a', 'alice'],
        ],
      );
      assert.equal((await s.q.pauses()).length, 3);
      await rejects(s.q.resume({ kindPrefix: 'b', scope: acme }), ErrorCode.NotFound);
      await rejects(s.q.pause({ kindPrefix: '', scope: acme }), ErrorCode.InvalidArgument);
    });

    it('refuses pauses past the bounds per scope and in all, writing nothing', async () => {
      const bounds = { maxPerScope: 2, maxTotal: 3 };
      const pause = (scope: typeof acme | 'everywhere', kindPrefix: string) =>
        s.h.store.pauseKinds({ scope, kindPrefix, pausedAt: s.now(), by: 'test' }, bounds);
      await pause(acme, 'a');
      await pause(acme, 'b');
      await rejects(pause(acme, 'c'), ErrorCode.FailedPrecondition);
      await pause(globex, 'a');
      await rejects(pause('everywhere', 'x'), ErrorCode.FailedPrecondition);
      assert.equal((await s.h.store.listPauses(ANY_SCOPE)).length, 3);
      // The queue's own bound: 100 per scope.
      for (let i = 0; i < 100; i++) await s.q.pause({ kindPrefix: `p${i}`, scope: tenantScope('busy') });
      await rejects(s.q.pause({ kindPrefix: 'p100', scope: tenantScope('busy') }), ErrorCode.FailedPrecondition);
      assert.equal((await s.q.pauses(tenantScope('busy'))).length, 100);
    });
  });
}
