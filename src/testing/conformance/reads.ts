/** Conformance cases: show, list and counts. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ListOrder } from '../../core/list-order.ts';
import { ANY_SCOPE, JobState, SYSTEM_SCOPE, tenantScope } from '../../core/types.ts';
import type { ListOptions } from '../../engine/queue-options.ts';
import { jobIn } from './harness.ts';
import { acme, globex, ErrorCode, rejects, countsOf, type Suite } from './context.ts';

export function readCases(s: Suite): void {
  describe('health', () => {
    it('reports ready while open and unavailable once closed', async () => {
      await s.h.store.health();
      await s.q.health();
      await s.q.close();
      await rejects(s.h.store.health(), ErrorCode.Unavailable);
      await rejects(s.q.health(), ErrorCode.Unavailable);
    });
  });

  describe('show, list and counts', () => {
    it('shows a job only within its own scope', async () => {
      const job = await jobIn(s.h, acme, 'pending');
      assert.equal((await s.q.show(job.jobId, acme)).jobId, job.jobId);
      await rejects(s.q.show(job.jobId, globex), ErrorCode.NotFound);
      await rejects(s.q.retry(job.jobId, globex), ErrorCode.NotFound);
      await rejects(s.q.complete(job.jobId, { workerId: 'w', leaseGeneration: 0 }, {}, globex), ErrorCode.NotFound);
    });

    it('lists by scope, state and kind, newest first, page by page', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        // Priorities differ so that key order (priority first) is not creation order.
        const { job } = await s.q.enqueue({ kind: i % 2 === 0 ? 'even' : 'odd', priority: (i * 5) % 3 }, acme);
        ids.push(job.jobId);
        s.h.clock.advanceSeconds(1);
      }
      await s.q.enqueue({ kind: 'even' }, globex);
      assert.deepEqual(await allPages(s, { scope: acme, state: JobState.Pending }, 3), ids.toReversed());
      assert.deepEqual(await allPages(s, { scope: acme, state: JobState.Pending, order: 'oldest_first' }, 3), ids);
      const evens = await s.q.list({ scope: acme, kindPrefix: 'ev' });
      assert.deepEqual(
        evens.jobs.map((j) => j.jobId),
        ids.filter((_, i) => i % 2 === 0).toReversed(),
      );
      const everywhere = await s.q.list({ scope: ANY_SCOPE, state: JobState.Pending });
      assert.equal(everywhere.jobs.length, 8);
      assert.equal((await s.q.list({ scope: acme, state: JobState.Completed })).jobs.length, 0);
      await rejects(s.q.list({ order: 'sideways' as ListOrder }), ErrorCode.InvalidArgument);
    });

    it('lists every state newest first, a job in each state in its place', async () => {
      const made: string[] = [];
      for (const state of ['completed', 'pending', 'dead', 'leased', 'cancelled', 'pending'] as const) {
        made.push((await jobIn(s.h, acme, state, { kind: `k${made.length}`, priority: made.length % 2 })).jobId);
        s.h.clock.advanceSeconds(1);
      }
      assert.deepEqual(await allPages(s, { scope: acme }, 4), made.toReversed());
      assert.deepEqual(await allPages(s, { scope: acme, order: 'oldest_first' }, 4), made);
    });

    it('interleaves tenants by time across every scope, newest first', async () => {
      const made: string[] = [];
      for (const scope of [acme, globex, tenantScope('initech'), acme, globex, tenantScope('initech')]) {
        made.push((await s.q.enqueue({ kind: 'k' }, scope)).job.jobId);
        s.h.clock.advanceSeconds(1);
      }
      await jobIn(s.h, acme, 'completed');
      assert.deepEqual(await allPages(s, { scope: ANY_SCOPE, state: JobState.Pending }, 4), made.toReversed());
      assert.deepEqual(
        await allPages(s, { scope: ANY_SCOPE, state: JobState.Pending, order: 'oldest_first' }, 4),
        made,
      );
    });

    it('leaves system jobs out of a list across every scope unless asked for', async () => {
      const tenantJob = (await s.q.enqueue({ kind: 'k' }, acme)).job.jobId;
      s.h.clock.advanceSeconds(1);
      const systemJob = (await s.q.enqueue({ kind: 'system:test' }, SYSTEM_SCOPE)).job.jobId;
      assert.deepEqual(await allPages(s, {}, 10), [tenantJob]);
      assert.deepEqual(await allPages(s, { includeSystem: true }, 10), [systemJob, tenantJob]);
      assert.deepEqual(await allPages(s, { kindPrefix: 'system:' }, 10), [systemJob], 'a system: prefix asks for them');
      assert.deepEqual(await allPages(s, { scope: SYSTEM_SCOPE }, 10), [systemJob]);
      assert.deepEqual(await allPages(s, { scope: acme, includeSystem: true }, 10), [tenantJob]);
    });

    it('lists across scopes page by page', async () => {
      for (const scope of [acme, globex, tenantScope('initech')]) {
        await s.q.enqueueBatch([{ kind: 'k' }, { kind: 'k' }], scope);
      }
      await jobIn(s.h, acme, 'completed');
      const seen: string[] = [];
      let pageToken: string | undefined;
      for (let page = 0; page < 10; page++) {
        const result = await s.q.list({
          scope: ANY_SCOPE,
          state: JobState.Pending,
          limit: 4,
          ...(pageToken ? { pageToken } : {}),
        });
        seen.push(...result.jobs.map((j) => j.jobId));
        if (result.nextPageToken === null) break;
        pageToken = result.nextPageToken;
      }
      assert.equal(seen.length, 6);
      assert.equal(new Set(seen).size, 6);
    });

    it('counts jobs per state and kind, per scope', async () => {
      await jobIn(s.h, acme, 'pending', { kind: 'a' });
      await jobIn(s.h, acme, 'completed', { kind: 'b' });
      await jobIn(s.h, acme, 'dead', { kind: 'c' });
      await jobIn(s.h, globex, 'leased', { kind: 'a' });
      assert.deepEqual(await s.q.counts(acme), [
        { state: JobState.Pending, kind: 'a', count: 1 },
        { state: JobState.Completed, kind: 'b', count: 1 },
        { state: JobState.Dead, kind: 'c', count: 1 },
      ]);
      assert.deepEqual(await s.q.counts(globex), [{ state: JobState.Leased, kind: 'a', count: 1 }]);
      assert.deepEqual(await countsOf(s.q), {
        [JobState.Pending]: 1,
        [JobState.Leased]: 1,
        [JobState.Completed]: 1,
        [JobState.Dead]: 1,
      });
    });

    it('finds leased jobs across scopes, optionally by worker (find_leased_any)', async () => {
      await jobIn(s.h, acme, 'leased');
      await jobIn(s.h, globex, 'leased');
      await jobIn(s.h, globex, 'pending');
      assert.equal((await s.q.leased()).length, 2);
      assert.equal((await s.q.leased({ workerId: 'fixture-worker' })).length, 2);
      assert.equal((await s.q.leased({ workerId: 'nobody' })).length, 0);
    });
  });
}

/** Every page of a listing, `limit` at a time, as job ids in the order listed. */
async function allPages(s: Suite, options: ListOptions, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let pageToken: string | null = null;
  do {
    const page = await s.q.list({ ...options, limit, ...(pageToken === null ? {} : { pageToken }) });
    seen.push(...page.jobs.map((j) => j.jobId));
    pageToken = page.nextPageToken;
  } while (pageToken !== null && seen.length < 1_000);
  return seen;
}
