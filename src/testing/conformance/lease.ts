/** Conformance cases: lease_next. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANY_SCOPE, JobState, SYSTEM_SCOPE } from '../../core/types.ts';
import { fenceOf } from './harness.ts';
import { acme, globex, SECOND, ErrorCode, rejects, countsOf, type Suite } from './context.ts';

export function leaseCases(s: Suite): void {
  describe('lease_next', () => {
    it('leases lower priority bytes first and FIFO within a priority', async () => {
      const late = await s.q.enqueue({ kind: 'k', priority: 5 }, acme);
      const urgent = await s.q.enqueue({ kind: 'k', priority: 1 }, acme);
      const later = await s.q.enqueue({ kind: 'k', priority: 5 }, acme);
      const order = [(await s.lease(acme)).jobId, (await s.lease(acme)).jobId, (await s.lease(acme)).jobId];
      assert.deepEqual(order, [urgent.job.jobId, late.job.jobId, later.job.jobId]);
    });

    it('skips a job behind its not_before gate and leases it once the gate opens', async () => {
      const gated = await s.q.enqueue({ kind: 'k', priority: 0, delayMs: 5_000 }, acme);
      const ready = await s.q.enqueue({ kind: 'k', priority: 9 }, acme);
      assert.equal((await s.lease(acme)).jobId, ready.job.jobId);
      assert.equal(await s.q.leaseNext({ workerId: 'w1', scope: acme }), null);
      assert.equal(await s.h.store.nextGateAt(acme, s.now()), s.now() + 5 * SECOND);
      s.h.clock.advanceSeconds(5);
      assert.equal((await s.lease(acme)).jobId, gated.job.jobId);
    });

    it('leases only kinds matching one of the prefixes', async () => {
      await s.q.enqueue({ kind: 'embed' }, acme);
      const ingest = await s.q.enqueue({ kind: 'ingest:pdf' }, acme);
      assert.equal((await s.lease(acme, 'w1', ['ingest:', 'sync:'])).jobId, ingest.job.jobId);
      assert.equal(await s.q.leaseNext({ workerId: 'w1', kinds: ['ingest:'], scope: acme }), null);
    });

    it('increments the generation, sets the worker and deadline, and clears the continuation', async () => {
      await s.withHarness({ config: { jobs: { lease_ttl_secs: 45 } } });
      await s.q.enqueue({ kind: 'k' }, acme);
      const first = await s.lease(acme, 'w1');
      assert.equal(first.state, JobState.Leased);
      assert.equal(first.leaseGeneration, 1);
      assert.equal(first.workerId, 'w1');
      assert.equal(first.leaseDeadline, s.now() + 45 * SECOND);
      await s.q.checkpoint(first.jobId, fenceOf(first), Buffer.from('seq=4'));
      s.h.clock.advanceSeconds(46);
      await s.q.maintenance.reapExpired();
      s.h.clock.advanceSeconds(3_600);
      const second = await s.lease(acme, 'w2');
      assert.equal(second.leaseGeneration, 2);
      assert.equal(second.continuation, null);
    });

    it('returns null when nothing is eligible', async () => {
      assert.equal(await s.q.leaseNext({ workerId: 'w1', scope: acme }), null);
    });

    it("never leases another tenant's job from a tenant scope", async () => {
      await s.q.enqueue({ kind: 'k' }, globex);
      assert.equal(await s.q.leaseNext({ workerId: 'w1', scope: acme }), null);
    });

    it('leases system jobs ahead of every tenant across scopes, for a worker that names system kinds', async () => {
      await s.q.enqueue({ kind: 'k', priority: 0 }, acme);
      await s.q.enqueue({ kind: 'k', priority: 0 }, globex);
      const system = await s.q.enqueue({ kind: 'system:compact', priority: 255 }, SYSTEM_SCOPE);
      assert.equal((await s.lease(ANY_SCOPE, 'w1', ['k', 'system:'])).jobId, system.job.jobId);
      const next = [(await s.lease(ANY_SCOPE)).tenant, (await s.lease(ANY_SCOPE)).tenant].sort();
      assert.deepEqual(next, ['acme', 'globex']);
    });

    it('never hands a system job to a lease that did not name system kinds', async () => {
      const system = await s.q.enqueue({ kind: 'system:prune', priority: 0 }, SYSTEM_SCOPE);
      const tenant = await s.q.enqueue({ kind: 'k', priority: 255 }, acme);
      // Every kind, on every scope: the tenant job, though the system job sorts first.
      assert.equal((await s.q.leaseNext({ workerId: 'w1' }))?.jobId, tenant.job.jobId);
      for (const kinds of [undefined, [], ['sys'], ['s'], ['system'], ['k', 'sys']]) {
        for (const scope of [ANY_SCOPE, SYSTEM_SCOPE]) {
          const options = { workerId: 'w1', scope, ...(kinds === undefined ? {} : { kinds }) };
          assert.equal(await s.q.leaseNext(options), null, `kinds ${JSON.stringify(kinds)} on ${scope.type}`);
        }
      }
      await rejects(s.q.leaseNext({ workerId: 'w1', kinds: [''] }), ErrorCode.InvalidArgument, (e) =>
        assert.equal(e.field, 'kinds[0]'),
      );
      assert.equal((await s.q.show(system.job.jobId)).state, JobState.Pending);
      // Named by a prefix that is itself a system prefix, it is leased.
      assert.equal((await s.lease(ANY_SCOPE, 'w1', ['sys', 'system:p'])).jobId, system.job.jobId);
    });

    it('wakes no catch-all lease call for a system job', async () => {
      const stop = new AbortController();
      const parked = s.q.lease({ workerId: 'w1', waitMs: 60_000, signal: stop.signal });
      while (s.q.waits.parked === 0) await new Promise((resolve) => setImmediate(resolve));
      await s.q.enqueue({ kind: 'system:prune' }, SYSTEM_SCOPE);
      assert.equal(s.q.waits.parked, 1, 'still parked');
      assert.equal(s.q.waits.ended.woken, 0);
      stop.abort();
      assert.deepEqual(await parked, []);
      assert.equal(s.q.waits.ended.aborted, 1);
    });

    it('takes up to N jobs at once in lease order', async () => {
      const ids = (await s.q.enqueueBatch([{ kind: 'k' }, { kind: 'k' }, { kind: 'k' }], acme)).map((r) => r.job.jobId);
      const batch = await s.q.lease({ workerId: 'w1', scope: acme, limit: 2 });
      assert.deepEqual(
        batch.map((j) => j.jobId),
        ids.slice(0, 2),
      );
      assert.equal((await s.q.lease({ workerId: 'w1', scope: acme, limit: 5 })).length, 1);
    });

    it('leases every job exactly once with 8 concurrent workers on 400 jobs', async () => {
      await s.q.enqueueBatch(
        Array.from({ length: 400 }, () => ({ kind: 'k' })),
        acme,
      );
      const seen = new Map<string, number>();
      const worker = async (w: number): Promise<void> => {
        for (;;) {
          const job = await s.q.leaseNext({ workerId: `w${w}`, scope: acme });
          if (job === null) return;
          seen.set(job.jobId, (seen.get(job.jobId) ?? 0) + 1);
          await s.q.complete(job.jobId, fenceOf(job));
        }
      };
      await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w)));
      assert.equal(seen.size, 400);
      assert.ok([...seen.values()].every((n) => n === 1));
      assert.deepEqual(await countsOf(s.q), { [JobState.Completed]: 400 });
    });

    it('refuses a bad worker id or kind filter', async () => {
      await rejects(s.q.leaseNext({ workerId: '', scope: acme }), ErrorCode.InvalidArgument, (e) =>
        assert.equal(e.field, 'worker_id'),
      );
      await rejects(s.q.leaseNext({ workerId: 'w', kinds: [''], scope: acme }), ErrorCode.InvalidArgument, (e) =>
        assert.equal(e.field, 'kinds[0]'),
      );
    });
  });
}
