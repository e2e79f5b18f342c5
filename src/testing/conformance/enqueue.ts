/** Conformance cases: enqueue. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState, SYSTEM_SCOPE, tenantScope } from '../../core/types.ts';
import { fenceOf } from './harness.ts';
import { acme, globex, ErrorCode, rejects, countsOf, type Suite } from './context.ts';

export function enqueueCases(s: Suite): void {
  describe('enqueue', () => {
    it('enqueues a Pending job with no attempts, generation 0 and one enqueued event', async () => {
      const { job, created } = await s.q.enqueue(
        {
          kind: 'email',
          payload: Buffer.from('hi'),
          priority: 7,
        },
        acme,
      );
      assert.equal(created, true);
      assert.equal(job.state, JobState.Pending);
      assert.equal(job.attempts, 0);
      assert.equal(job.leaseGeneration, 0);
      assert.equal(job.tenant, 'acme');
      assert.equal(job.priority, 7);
      assert.deepEqual(Buffer.from(job.payload), Buffer.from('hi'));
      assert.deepEqual(
        job.events.map((e) => e.transition),
        ['enqueued'],
      );
      const shown = await s.q.show(job.jobId);
      assert.deepEqual(shown, job);
    });

    it('returns the first job and writes nothing for a repeated idempotency key in the same scope', async () => {
      const first = await s.q.enqueue({ kind: 'email', idempotencyKey: 'order-1' }, acme);
      const again = await s.q.enqueue({ kind: 'other', idempotencyKey: 'order-1', priority: 3 }, acme);
      assert.equal(again.created, false);
      assert.deepEqual(again.job, first.job);
      assert.deepEqual(await countsOf(s.q), { [JobState.Pending]: 1 });
    });

    it('keeps returning the first job with that key after it completed', async () => {
      const first = await s.q.enqueue({ kind: 'email', idempotencyKey: 'order-1' }, acme);
      const leased = await s.lease(acme);
      await s.q.complete(leased.jobId, fenceOf(leased));
      const again = await s.q.enqueue({ kind: 'email', idempotencyKey: 'order-1' }, acme);
      assert.equal(again.created, false);
      assert.equal(again.job.jobId, first.job.jobId);
      assert.equal(again.job.state, JobState.Completed);
    });

    it('treats the same idempotency key in another scope as another job', async () => {
      const a = await s.q.enqueue({ kind: 'email', idempotencyKey: 'k' }, acme);
      const b = await s.q.enqueue({ kind: 'email', idempotencyKey: 'k' }, globex);
      assert.equal(b.created, true);
      assert.notEqual(a.job.jobId, b.job.jobId);
    });

    it('enqueues a batch in one write and deduplicates keys within it', async () => {
      const results = await s.q.enqueueBatch(
        [{ kind: 'a', idempotencyKey: 'same' }, { kind: 'b' }, { kind: 'c', idempotencyKey: 'same' }],
        acme,
      );
      assert.deepEqual(
        results.map((r) => r.created),
        [true, true, false],
      );
      assert.equal(results[2]?.job.jobId, results[0]?.job.jobId);
      assert.deepEqual(await countsOf(s.q), { [JobState.Pending]: 2 });
    });

    it('gives jobs enqueued in the same microsecond strictly increasing created_at, so they lease in enqueue order', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await s.q.enqueue({ kind: 'tick' }, acme)).job.jobId);
      const batch = await s.q.enqueueBatch([{ kind: 'tick' }, { kind: 'tick' }], acme);
      ids.push(...batch.map((r) => r.job.jobId));
      const created = await Promise.all(ids.map(async (id) => (await s.q.show(id)).createdAt));
      for (let i = 1; i < created.length; i++) assert.ok((created[i] as number) > (created[i - 1] as number));
      const leasedOrder: string[] = [];
      for (let i = 0; i < ids.length; i++) leasedOrder.push((await s.lease(acme)).jobId);
      assert.deepEqual(leasedOrder, ids);
    });

    for (const [what, scope, job, field] of [
      ['an empty kind', acme, { kind: '' }, 'kind'],
      ['a kind over 255 bytes', acme, { kind: 'k'.repeat(256) }, 'kind'],
      ['a kind with whitespace', acme, { kind: 'a b' }, 'kind'],
      ['a system kind in a tenant scope', acme, { kind: 'system:prune' }, 'kind'],
      ['a tenant kind in the system scope', SYSTEM_SCOPE, { kind: 'email' }, 'kind'],
      ['priority 256', acme, { kind: 'k', priority: 256 }, 'priority'],
      ['priority -1', acme, { kind: 'k', priority: -1 }, 'priority'],
      ['a fractional priority', acme, { kind: 'k', priority: 1.5 }, 'priority'],
      ['a negative delay', acme, { kind: 'k', delayMs: -1 }, 'delay_ms'],
      ['a delay over ten years', acme, { kind: 'k', delayMs: 315_360_000_001 }, 'delay_ms'],
      ['a not_before past 2200', acme, { kind: 'k', notBefore: Date.UTC(2200, 0, 1) * 1000 + 1 }, 'not_before'],
      ['max_attempts 0', acme, { kind: 'k', maxAttempts: 0 }, 'max_attempts'],
      ['max_attempts over a million', acme, { kind: 'k', maxAttempts: 1_000_001 }, 'max_attempts'],
      ['a kind with a lone surrogate', acme, { kind: 'a\ud800' }, 'kind'],
      ['an idempotency key with a lone surrogate', acme, { kind: 'k', idempotencyKey: '\udc00' }, 'idempotency_key'],
      ['a tenant with a lone surrogate', tenantScope('t\ud800'), { kind: 'k' }, 'scope.tenant'],
      ['an idempotency key over 255 bytes', acme, { kind: 'k', idempotencyKey: 'x'.repeat(256) }, 'idempotency_key'],
      ['an empty idempotency key', acme, { kind: 'k', idempotencyKey: '' }, 'idempotency_key'],
      ['an empty tenant', tenantScope(''), { kind: 'k' }, 'scope.tenant'],
    ] as const) {
      it(`refuses ${what}, naming ${field}, and writes nothing`, async () => {
        await rejects(s.q.enqueue(job, scope), ErrorCode.InvalidArgument, (e) => assert.equal(e.field, field));
        assert.deepEqual(await countsOf(s.q), {});
      });
    }

    it('refuses a payload over jobs.max_payload_bytes and writes nothing', async () => {
      await s.withHarness({ config: { jobs: { max_payload_bytes: 16 } } });
      await s.q.enqueue({ kind: 'k', payload: new Uint8Array(16) }, acme);
      await rejects(s.q.enqueue({ kind: 'k', payload: new Uint8Array(17) }, acme), ErrorCode.InvalidArgument, (e) =>
        assert.equal(e.field, 'payload'),
      );
      assert.deepEqual(await countsOf(s.q), { [JobState.Pending]: 1 });
    });

    it('writes none of a batch when one job in it is bad', async () => {
      await rejects(
        s.q.enqueueBatch([{ kind: 'ok' }, { kind: 'bad', priority: 300 }], acme),
        ErrorCode.InvalidArgument,
        (e) => assert.equal(e.field, 'jobs[1].priority'),
      );
      assert.deepEqual(await countsOf(s.q), {});
    });
  });
}
