/**
 * Conformance cases: ordered keys (`NewJob.orderKey`, `core/ordered-keys.ts`). Jobs of one key in
 * one scope run one at a time in enqueue order; a failed job's backoff keeps the key; a Dead head
 * blocks it until retried, discarded or released; fencing refuses a stale holder as ever.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ORDER_WAIT } from '../../core/ordered-keys.ts';
import { JobState, type JobRecord } from '../../core/types.ts';
import { fenceOf } from './harness.ts';
import { acme, conflict, ErrorCode, globex, rejects, SECOND, type Suite } from './context.ts';

export function orderedKeyCases(s: Suite): void {
  const enqueue = async (key: string, payload: string, more: object = {}, scope = acme): Promise<JobRecord> =>
    (await s.q.enqueue({ kind: 'sync', payload, orderKey: key, ...more }, scope)).job;
  const leaseAll = async (workerId = 'w1'): Promise<JobRecord[]> => s.q.lease({ workerId, scope: acme, limit: 100 });

  describe('ordered keys', () => {
    it('runs the jobs of a key one at a time in enqueue order, whatever their priorities, across 50 jobs', async () => {
      const jobs: JobRecord[] = [];
      for (let i = 0; i < 50; i++) {
        // Alternate keys and falling priorities: neither may change a key's order.
        jobs.push(await enqueue(`k${i % 2}`, `p${i}`, { priority: 200 - i }));
      }
      const plain = (await s.q.enqueue({ kind: 'sync', payload: 'plain' }, acme)).job;
      const ran: string[] = [];
      for (let round = 0; round < 25; round++) {
        // Three workers ask at once: each key hands out only its head.
        const leased = (await Promise.all(['w1', 'w2', 'w3'].map((w) => leaseAll(w)))).flat();
        const keyed = leased.filter((j) => j.orderKey !== null);
        assert.equal(keyed.length, 2, `round ${round}: one job per key`);
        assert.deepEqual(new Set(keyed.map((j) => j.orderKey)), new Set(['k0', 'k1']));
        for (const job of leased) {
          if (job.orderKey !== null) ran.push(Buffer.from(job.payload).toString());
          await s.q.complete(job.jobId, fenceOf(job));
        }
      }
      for (const key of [0, 1]) {
        const expected = jobs.filter((_, i) => i % 2 === key).map((j) => Buffer.from(j.payload).toString());
        assert.deepEqual(
          ran.filter((p) => Number(p.slice(1)) % 2 === key),
          expected,
        );
      }
      assert.equal((await s.q.show(plain.jobId)).state, JobState.Completed);
      assert.equal(
        (await s.q.show(jobs[49]?.jobId ?? '')).events.some((e) => e.transition === 'promoted'),
        true,
      );
    });

    it('keeps the key through a failed head: its successors wait out its backoff, then run after it', async () => {
      const head = await enqueue('k', 'a');
      const next = await enqueue('k', 'b');
      assert.equal(next.notBefore, ORDER_WAIT, 'the second job waits for its turn');
      const leased = await s.lease(acme);
      assert.equal(leased.jobId, head.jobId);
      const failed = await s.q.fail(head.jobId, fenceOf(leased), { error: 'boom' });
      assert.equal(failed.state, JobState.Pending);
      s.h.clock.advanceSeconds(3_600);
      const again = await leaseAll();
      assert.deepEqual(
        again.map((j) => j.jobId),
        [head.jobId],
        'only the head runs again, though its successor is older in the claim order than nothing',
      );
      await s.q.complete(head.jobId, fenceOf(again[0] as JobRecord));
      const promoted = await s.q.show(next.jobId);
      assert.equal(promoted.notBefore, null);
      assert.deepEqual(promoted.events.at(-1), {
        at: s.now(),
        transition: 'promoted',
        detail: `order_key=k after=${head.jobId}`,
      });
      assert.equal((await s.lease(acme)).jobId, next.jobId);
    });

    it('blocks the key behind a dead head until an operator releases it, and lists it meanwhile', async () => {
      await s.withHarness({ config: { jobs: { max_attempts: 1 } } });
      const head = await enqueue('k', 'a');
      const next = await enqueue('k', 'b');
      const leased = await s.lease(acme);
      assert.equal((await s.q.fail(head.jobId, fenceOf(leased), { error: 'boom' })).state, JobState.Dead);
      assert.deepEqual(await leaseAll(), [], 'the dead head blocks its key');
      const blocked = await s.q.blockedKeys(acme);
      assert.equal(blocked.length, 1);
      assert.equal(blocked[0]?.orderKey, 'k');
      assert.equal(blocked[0]?.tenant, 'acme');
      assert.equal(blocked[0]?.head?.jobId, head.jobId);
      assert.equal(blocked[0]?.waiting, 1);
      assert.deepEqual(await s.q.blockedKeys(globex), [], 'another scope sees none');
      // Durable stores keep the line across a reopen.
      if (s.q.backend !== 'memory') {
        await s.h.reopen();
        assert.equal((await s.q.blockedKeys(acme)).length, 1);
      }
      const promoted = await s.q.releaseKey(acme, 'k');
      assert.equal(promoted?.jobId, next.jobId);
      assert.deepEqual(await s.q.blockedKeys(acme), []);
      assert.equal((await s.q.show(head.jobId)).state, JobState.Dead, 'the head stays dead');
      assert.equal((await s.lease(acme)).jobId, next.jobId);
      await rejects(s.q.releaseKey(acme, 'k'), ErrorCode.FailedPrecondition);
      await rejects(s.q.releaseKey(acme, 'nope'), ErrorCode.NotFound);
    });

    it('lets a dead head retried run again first, and a discarded one free the key', async () => {
      await s.withHarness({ config: { jobs: { max_attempts: 1 } } });
      const head = await enqueue('k', 'a');
      const next = await enqueue('k', 'b');
      await s.q.fail(head.jobId, fenceOf(await s.lease(acme)), { error: 'boom' });
      await s.q.retry(head.jobId);
      const again = await leaseAll();
      assert.deepEqual(
        again.map((j) => j.jobId),
        [head.jobId],
      );
      await s.q.fail(head.jobId, fenceOf(again[0] as JobRecord), { error: 'boom again' });
      await s.q.discard(head.jobId);
      assert.equal((await s.lease(acme)).jobId, next.jobId);
    });

    it("with orderOnDead 'release' lets the next job run when the head goes dead", async () => {
      await s.withHarness({ config: { jobs: { max_attempts: 1 } } });
      const head = await enqueue('k', 'a', { orderOnDead: 'release' });
      const next = await enqueue('k', 'b');
      await s.q.fail(head.jobId, fenceOf(await s.lease(acme)), { error: 'boom' });
      assert.deepEqual(await s.q.blockedKeys(acme), []);
      assert.equal((await s.lease(acme)).jobId, next.jobId);
    });

    it('frees the key when the head is cancelled, and keeps the line when a waiting job is', async () => {
      const head = await enqueue('k', 'a');
      const second = await enqueue('k', 'b');
      const third = await enqueue('k', 'c');
      await s.q.cancel(second.jobId);
      assert.equal((await s.q.show(third.jobId)).notBefore, ORDER_WAIT, 'the third still waits for the head');
      await s.q.cancel(head.jobId);
      assert.equal((await s.lease(acme)).jobId, third.jobId);
    });

    it('refuses a stale fence after the head was reaped, and the key still proceeds in order', async () => {
      const head = await enqueue('k', 'a');
      const next = await enqueue('k', 'b');
      const stale = await s.lease(acme, 'w1');
      await s.expireAndReap();
      const current = await s.lease(acme, 'w1');
      assert.equal(current.jobId, head.jobId, 'the reaped head keeps its turn');
      await rejects(
        s.q.complete(head.jobId, fenceOf(stale)),
        ErrorCode.LeaseConflict,
        conflict('generation_superseded'),
      );
      assert.equal((await s.q.show(next.jobId)).notBefore, ORDER_WAIT, 'the refused result moved nothing');
      await s.q.complete(head.jobId, fenceOf(current));
      assert.equal((await s.lease(acme)).jobId, next.jobId);
    });

    it('keeps keys of different scopes apart, and jobs without a key unaffected', async () => {
      const a = await enqueue('k', 'a', {}, acme);
      const b = await enqueue('k', 'b', {}, globex);
      const plain = (await s.q.enqueue({ kind: 'sync', payload: 'p', delayMs: 0 }, acme)).job;
      assert.equal(a.notBefore, null);
      assert.equal(b.notBefore, null, 'the same key in another scope is another line');
      const leased = await s.q.lease({ workerId: 'w1', limit: 10 });
      assert.deepEqual(new Set(leased.map((j) => j.jobId)), new Set([a.jobId, b.jobId, plain.jobId]));
    });

    it("restores a waiting job's own delay when its turn comes, and refuses run now while it waits", async () => {
      const head = await enqueue('k', 'a');
      const enqueuedAt = s.now();
      const next = await enqueue('k', 'b', { delayMs: 10_000 });
      assert.equal(next.notBefore, ORDER_WAIT);
      await rejects(s.q.runNow(next.jobId), ErrorCode.FailedPrecondition);
      await s.q.complete(head.jobId, fenceOf(await s.lease(acme)));
      assert.equal((await s.q.show(next.jobId)).notBefore, enqueuedAt + 10 * SECOND);
      assert.deepEqual(await leaseAll(), []);
      s.h.clock.advanceSeconds(10);
      assert.equal((await s.lease(acme)).jobId, next.jobId);
    });

    it('starts a new line with a successor of the head enqueued by its completion', async () => {
      const head = await enqueue('k', 'a');
      const leased = await s.lease(acme);
      const done = await s.q.complete(head.jobId, fenceOf(leased), {
        successors: [{ kind: 'sync', payload: 'b', orderKey: 'k' }],
      });
      const successor = done.successors[0]?.job as JobRecord;
      assert.equal(successor.notBefore, null, 'the line was empty: the successor is its head');
      assert.equal((await s.lease(acme)).jobId, successor.jobId);
    });

    it('refuses bad input naming the field, writing nothing', async () => {
      for (const [job, field] of [
        [{ kind: 'sync', orderKey: '' }, 'order_key'],
        [{ kind: 'sync', orderKey: 'x'.repeat(256) }, 'order_key'],
        [{ kind: 'sync', orderKey: 'k', supersedeKey: 'k' }, 'order_key'],
        [{ kind: 'sync', orderOnDead: 'release' }, 'order_on_dead'],
        [{ kind: 'sync', orderKey: 'k', orderOnDead: 'later' }, 'order_on_dead'],
      ] as const) {
        await rejects(s.q.enqueue(job as never, acme), ErrorCode.InvalidArgument, (e) =>
          assert.match(e.message, new RegExp(field)),
        );
      }
      assert.deepEqual(await s.q.counts(acme), []);
      await rejects(s.q.releaseKey(acme, ''), ErrorCode.InvalidArgument);
    });
  });
}
