/**
 * Conformance cases: latest wins (`NewJob.supersedeKey`, `core/supersede.ts`). An enqueue
 * replaces the Pending holder of its key in its scope in one write; `supersede: 'leased'`
 * cancels a Leased holder too, fenced; a finished holder frees its key; debounce is the same
 * key with a window.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState, type JobRecord } from '../../core/types.ts';
import { transitionOf } from '../../core/transitions-log.ts';
import { fenceOf } from './harness.ts';
import { acme, conflict, countsOf, ErrorCode, globex, readLog, rejects, SECOND, type Suite } from './context.ts';

export function supersedeCases(s: Suite): void {
  const enqueue = async (key: string, payload: string, more: object = {}, scope = acme): Promise<JobRecord> =>
    (await s.q.enqueue({ kind: 'sync', payload, supersedeKey: key, ...more }, scope)).job;

  describe('supersede', () => {
    it('replaces the pending holder of its key: the old job ends cancelled, linked to its successor', async () => {
      const first = await enqueue('doc-1', 'v1', { delayMs: 60_000 });
      const { job: second, created } = await s.q.enqueue({ kind: 'sync', payload: 'v2', supersedeKey: 'doc-1' }, acme);
      assert.equal(created, true);
      assert.equal(second.state, JobState.Pending);
      assert.equal(second.supersedeKey, 'doc-1');
      const old = await s.q.show(first.jobId);
      assert.equal(old.state, JobState.Cancelled);
      assert.equal(old.supersededBy, second.jobId);
      assert.deepEqual(old.events.at(-1), {
        at: s.now(),
        transition: 'cancelled',
        detail: `reason=superseded successor=${second.jobId}`,
      });
      const leased = await s.lease(acme);
      assert.equal(leased.jobId, second.jobId);
      assert.equal(Buffer.from(leased.payload).toString(), 'v2');
      assert.deepEqual(await countsOf(s.q), { [JobState.Leased]: 1, [JobState.Cancelled]: 1 });
      // Durable stores keep the link and the key's holder across a reopen.
      if (s.q.backend !== 'memory') {
        const queue = await s.h.reopen();
        assert.deepEqual(await queue.show(first.jobId), old);
        await queue.enqueue({ kind: 'sync', payload: 'v3', supersedeKey: 'doc-1', supersede: 'leased' }, acme);
        assert.equal((await queue.show(second.jobId)).state, JobState.Cancelled);
      }
    });

    it('names the successor in the transitions log entry of the cancellation', async () => {
      const head = await s.q.feed.head();
      const first = await enqueue('k', 'a');
      const second = await enqueue('k', 'b');
      // Its enqueue, then its cancellation.
      const { entries } = await readLog(s.q, head, { scope: acme, kindPrefix: '', jobId: first.jobId }, 2);
      const cancelled = entries.find((e) => e.job.jobId === first.jobId && e.job.state === JobState.Cancelled);
      assert.ok(cancelled, 'the log holds the cancellation');
      assert.equal(cancelled.job.supersededBy, second.jobId);
      assert.equal(transitionOf(cancelled.job).detail, `reason=superseded successor=${second.jobId}`);
    });

    it('answers a repeated idempotency key as the call leaves its job, superseded later in the same call', async () => {
      const [first, repeat, successor] = await s.q.enqueueBatch(
        [
          { kind: 'sync', idempotencyKey: 'once', supersedeKey: 'doc' },
          { kind: 'sync', idempotencyKey: 'once', supersedeKey: 'other' },
          { kind: 'sync', supersedeKey: 'doc' },
        ],
        acme,
      );
      assert.equal(repeat?.created, false);
      assert.equal(repeat?.job.jobId, first?.job.jobId);
      // One write, one answer per job: the repeat does not show the job as it was before the third draft.
      for (const outcome of [first, repeat]) {
        assert.equal(outcome?.job.state, JobState.Cancelled);
        assert.equal(outcome?.job.supersededBy, successor?.job.jobId);
      }
      assert.equal((await s.q.show(first?.job.jobId ?? '')).state, JobState.Cancelled);
    });

    it('leaves a leased holder running by default; the new job runs beside it and holds the key', async () => {
      await enqueue('k', 'a');
      const running = await s.lease(acme);
      const next = await enqueue('k', 'b');
      assert.equal((await s.q.show(running.jobId)).state, JobState.Leased);
      await s.q.complete(running.jobId, fenceOf(running));
      // The key is the new job's: the next enqueue supersedes it, and the old completion freed nothing of it.
      const third = await enqueue('k', 'c');
      assert.equal((await s.q.show(next.jobId)).supersededBy, third.jobId);
    });

    it("with supersede 'leased' cancels a leased holder fenced: its late result is refused", async () => {
      await enqueue('k', 'a');
      const running = await s.lease(acme);
      const next = await enqueue('k', 'b', { supersede: 'leased' });
      const old = await s.q.show(running.jobId);
      assert.equal(old.state, JobState.Cancelled);
      assert.equal(old.supersededBy, next.jobId);
      assert.equal(
        old.events.at(-1)?.detail,
        `worker=w1 generation=${running.leaseGeneration} reason=superseded successor=${next.jobId}`,
      );
      await rejects(s.q.complete(running.jobId, fenceOf(running)), ErrorCode.LeaseConflict, conflict('cancelled'));
      await rejects(s.q.heartbeat(running.jobId, fenceOf(running)), ErrorCode.LeaseConflict, conflict('cancelled'));
      assert.deepEqual(await s.q.show(running.jobId), old);
      assert.equal((await s.lease(acme, 'w2')).jobId, next.jobId);
    });

    it('frees the key when its holder completes, dies or is cancelled: the next enqueue replaces nothing', async () => {
      for (const end of ['complete', 'dead', 'cancel'] as const) {
        const key = `k-${end}`;
        const holder = await enqueue(key, 'a', { maxAttempts: 1, kind: `sync.${end}` });
        if (end === 'cancel') await s.q.cancel(holder.jobId);
        else {
          const leased = await s.lease(acme, 'w1', [`sync.${end}`]);
          if (end === 'complete') await s.q.complete(leased.jobId, fenceOf(leased));
          else await s.q.fail(leased.jobId, fenceOf(leased), { error: 'boom' });
        }
        const before = await s.q.show(holder.jobId);
        const next = await enqueue(key, 'b');
        assert.equal(next.state, JobState.Pending);
        assert.deepEqual(await s.q.show(holder.jobId), before, `${end}: the finished holder is untouched`);
      }
    });

    it('keeps keys apart by scope, and leaves jobs without a key alone', async () => {
      const mine = await enqueue('k', 'a');
      const theirs = await enqueue('k', 'a', {}, globex);
      const plain = (await s.q.enqueue({ kind: 'sync' }, acme)).job;
      await enqueue('k', 'b', {}, globex);
      assert.equal((await s.q.show(mine.jobId)).state, JobState.Pending);
      assert.equal((await s.q.show(plain.jobId)).state, JobState.Pending);
      assert.equal((await s.q.show(theirs.jobId)).state, JobState.Cancelled);
    });

    it('an idempotent repeat returns the first job and supersedes nothing', async () => {
      const first = await enqueue('k', 'a', { idempotencyKey: 'req-1' });
      const second = await enqueue('k', 'b');
      const repeat = await s.q.enqueue(
        { kind: 'sync', payload: 'a', supersedeKey: 'k', idempotencyKey: 'req-1' },
        acme,
      );
      assert.equal(repeat.created, false);
      assert.equal(repeat.job.jobId, first.jobId);
      assert.equal(repeat.job.state, JobState.Cancelled);
      assert.equal((await s.q.show(second.jobId)).state, JobState.Pending, 'the holder stays');
    });

    it('chains within one call: each enqueue of a batch supersedes the one before it', async () => {
      const results = await s.q.enqueueBatch(
        [
          { kind: 'sync', payload: '1', supersedeKey: 'k' },
          { kind: 'sync', payload: '2', supersedeKey: 'k' },
          { kind: 'sync', payload: '3', supersedeKey: 'k' },
        ],
        acme,
      );
      const [a, b, c] = results.map((r) => r.job) as [JobRecord, JobRecord, JobRecord];
      assert.deepEqual([a.state, b.state, c.state], [JobState.Cancelled, JobState.Cancelled, JobState.Pending]);
      assert.equal(a.supersededBy, b.jobId);
      assert.equal(b.supersededBy, c.jobId);
      assert.deepEqual(await s.q.show(a.jobId), a);
      assert.deepEqual(await countsOf(s.q), { [JobState.Pending]: 1, [JobState.Cancelled]: 2 });
    });

    it('lets concurrent enqueues of one key leave exactly one pending job', async () => {
      const jobs = await Promise.all(Array.from({ length: 20 }, (_, i) => enqueue('hot', `v${i}`)));
      const stored = await Promise.all(jobs.map((j) => s.q.show(j.jobId)));
      assert.equal(stored.filter((j) => j.state === JobState.Pending).length, 1);
      assert.equal(stored.filter((j) => j.state === JobState.Cancelled).length, 19);
    });

    it('a completion may chain a successor that takes the key its job lets go of', async () => {
      await enqueue('k', 'a');
      const leased = await s.lease(acme);
      const { successors } = await s.q.complete(leased.jobId, fenceOf(leased), {
        successors: [{ kind: 'sync', payload: 'b', supersedeKey: 'k' }],
      });
      const [successor] = successors;
      assert.ok(successor);
      const third = await enqueue('k', 'c');
      assert.equal((await s.q.show(successor.job.jobId)).supersededBy, third.jobId);
    });

    it('debounces: due one window after the latest enqueue, with the latest payload', async () => {
      await enqueue('d', 'v1', { debounceMs: 5_000 });
      s.h.clock.advance(3 * SECOND);
      const latest = await enqueue('d', 'v2', { debounceMs: 5_000 });
      assert.equal(latest.notBefore, s.now() + 5 * SECOND);
      s.h.clock.advance(3 * SECOND);
      assert.equal(await s.q.leaseNext({ workerId: 'w1', scope: acme }), null, 'the window restarted');
      s.h.clock.advance(2 * SECOND);
      const leased = await s.lease(acme);
      assert.equal(leased.jobId, latest.jobId);
      assert.equal(Buffer.from(leased.payload).toString(), 'v2');
      assert.deepEqual(await countsOf(s.q), { [JobState.Leased]: 1, [JobState.Cancelled]: 1 });
    });

    it('debounce max wait: due at most debounceMaxMs after the run began, however many enqueues follow', async () => {
      const window = { debounceMs: 5_000, debounceMaxMs: 12_000 };
      const first = await enqueue('m', 'v1', window);
      const began = s.now();
      assert.equal(first.notBefore, began + 5 * SECOND);
      assert.equal(first.debounceUntil, began + 12 * SECOND);
      let latest = first;
      // Enqueues at 3, 6, 9 and 11 s, each before the job it replaces is due.
      for (const [i, step] of [3, 3, 3, 2].entries()) {
        s.h.clock.advance(step * SECOND);
        assert.equal(await s.q.leaseNext({ workerId: 'w1', scope: acme }), null, 'the run is still open');
        latest = await enqueue('m', `v${i + 2}`, window);
      }
      // A plain trailing window would put the last at 16 s; the bound holds it to 12 s.
      assert.equal(latest.notBefore, began + 12 * SECOND);
      assert.equal(latest.debounceUntil, began + 12 * SECOND);
      assert.equal((await s.q.show(latest.jobId)).notBefore, began + 12 * SECOND, 'as stored');
      assert.equal(latest.events[0]?.detail, `not_before=${began + 12 * SECOND} supersede_key=m`);
      s.h.clock.advance(SECOND);
      const leased = await s.lease(acme);
      assert.equal(leased.jobId, latest.jobId);
      assert.equal(Buffer.from(leased.payload).toString(), 'v5');
      assert.deepEqual(await countsOf(s.q), { [JobState.Leased]: 1, [JobState.Cancelled]: 4 });

      // The run ended when its job was leased: the next enqueue begins a new one.
      s.h.clock.advance(SECOND);
      const next = await enqueue('m', 'w1', window);
      assert.equal(next.notBefore, s.now() + 5 * SECOND);
      assert.equal(next.debounceUntil, s.now() + 12 * SECOND);
      if (s.q.backend !== 'memory') {
        const queue = await s.h.reopen();
        s.h.clock.advance(4 * SECOND);
        const after = (await queue.enqueue({ kind: 'sync', payload: 'w2', supersedeKey: 'm', ...window }, acme)).job;
        assert.equal(after.debounceUntil, next.debounceUntil, 'the bound survives a reopen');
      }
    });

    it('debounce max wait: a job enqueued without it records nothing of it', async () => {
      const plain = await enqueue('p', 'v1', { debounceMs: 5_000 });
      assert.equal(plain.debounceUntil, null);
      s.h.clock.advance(SECOND);
      const bounded = await enqueue('p', 'v2', { debounceMs: 5_000, debounceMaxMs: 5_000 });
      // The Pending job it replaced began no bounded run: this enqueue begins one.
      assert.equal(bounded.debounceUntil, s.now() + 5 * SECOND);
      assert.equal(bounded.notBefore, s.now() + 5 * SECOND);
    });

    it('refuses bad input naming the field, and writes nothing', async () => {
      const holder = await enqueue('k', 'a');
      const bad: [object, string][] = [
        [{ supersedeKey: '' }, 'supersede_key'],
        [{ supersedeKey: 'x'.repeat(256) }, 'supersede_key'],
        [{ supersede: 'leased' }, 'supersede'],
        [{ supersedeKey: 'k', supersede: 'everything' }, 'supersede'],
        [{ debounceMs: 1_000 }, 'debounce_ms'],
        [{ supersedeKey: 'k', debounceMs: 0 }, 'debounce_ms'],
        [{ supersedeKey: 'k', debounceMs: 1_000, delayMs: 5 }, 'debounce_ms'],
        [{ supersedeKey: 'k', debounceMaxMs: 1_000 }, 'debounce_max_ms'],
        [{ supersedeKey: 'k', debounceMs: 1_000, debounceMaxMs: 999 }, 'debounce_max_ms'],
        [{ supersedeKey: 'k', debounceMs: 1_000, debounceMaxMs: 1.5e3 + 0.5 }, 'debounce_max_ms'],
      ];
      for (const [fields, field] of bad) {
        await rejects(s.q.enqueue({ kind: 'sync', ...fields }, acme), ErrorCode.InvalidArgument, (error) =>
          assert.match(error.message, new RegExp(`\\b${field}\\b`)),
        );
      }
      assert.deepEqual(await s.q.show(holder.jobId), holder);
      assert.deepEqual(await countsOf(s.q), { [JobState.Pending]: 1 });
    });
  });
}
