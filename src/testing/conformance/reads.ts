/** Conformance cases: show, list and counts. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANY_SCOPE, JobState, tenantScope } from '../../core/types.ts';
import { jobKeyOf } from '../../codec/keys.ts';
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

    it('lists by scope, state and kind, in key order, page by page', async () => {
      const ids = (
        await s.q.enqueueBatch(
          Array.from({ length: 7 }, (_, i) => ({ kind: i % 2 === 0 ? 'even' : 'odd' })),
          acme,
        )
      ).map((r) => r.job.jobId);
      await s.q.enqueue({ kind: 'even' }, globex);
      const seen: string[] = [];
      let pageToken: string | undefined;
      for (let page = 0; page < 10; page++) {
        const result = await s.q.list({
          scope: acme,
          state: JobState.Pending,
          limit: 3,
          ...(pageToken ? { pageToken } : {}),
        });
        seen.push(...result.jobs.map((j) => j.jobId));
        if (result.nextPageToken === null) break;
        pageToken = result.nextPageToken;
      }
      assert.deepEqual(seen, ids);
      const evens = await s.q.list({ scope: acme, kindPrefix: 'ev' });
      assert.equal(evens.jobs.length, 4);
      const everywhere = await s.q.list({ scope: ANY_SCOPE, state: JobState.Pending });
      assert.equal(everywhere.jobs.length, 8);
      const keys = everywhere.jobs.map((j) => jobKeyOf(j));
      for (let i = 1; i < keys.length; i++) assert.ok(Buffer.compare(keys[i - 1] as Buffer, keys[i] as Buffer) < 0);
      assert.equal((await s.q.list({ scope: acme, state: JobState.Completed })).jobs.length, 0);
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
