/**
 * Conformance cases: moving a store's contents into another store (`exportStore`,
 * `importStore`, over the seam's reads and `importJobs`). Each case exports the harness's store,
 * swaps in a fresh one of the same backend and imports there; `test/postgres/transfer.test.ts`
 * moves between backends.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANY_SCOPE, JobState, type JobRecord } from '../../core/types.ts';
import { exportStore, importStore } from '../../engine/transfer.ts';
import type { JobStore } from '../../storage/types.ts';
import { fenceOf, jobIn } from './harness.ts';
import { checkKeyed, fillKeyed } from './transfer-keys.ts';
import { acme, ErrorCode, globex, rejects, SECOND, type Suite } from './context.ts';

/** The stream of `store`, as lines. */
async function exported(s: Suite, store: JobStore): Promise<string[]> {
  let text = '';
  await exportStore(store, (line) => void (text += line), s.h.clock);
  return text.split('\n').filter((line) => line !== '');
}

/** `importStore` reading `lines`, as often as it asks. */
function imported(s: Suite, lines: readonly string[], merge = false): ReturnType<typeof importStore> {
  // eslint-disable-next-line @typescript-eslint/require-await -- an async iterable of lines, as a file gives them
  const read = async function* (): AsyncGenerator<string> {
    yield* lines;
  };
  return importStore(s.h.store, read, { merge }, s.h.clock);
}

async function everyJob(s: Suite): Promise<JobRecord[]> {
  const jobs = (await s.q.list({ scope: ANY_SCOPE, limit: 1_000 })).jobs;
  return [...jobs].sort((a, b) => a.jobId.localeCompare(b.jobId));
}

export function transferCases(s: Suite): void {
  describe('export and import', () => {
    /** One job in each state, a checkpoint, a result, a gate, an idempotency key; a schedule, a pause, a limit. */
    async function fill(): Promise<Record<string, JobRecord>> {
      const pending = await jobIn(s.h, acme, 'pending', { kind: 'mail.send', idempotencyKey: 'k-1', priority: 3 });
      const gated = (await s.q.enqueue({ kind: 'mail.later', delayMs: 60_000 }, globex)).job;
      const leased = await jobIn(s.h, acme, 'leased');
      const checkpointed = await s.q.checkpoint(leased.jobId, fenceOf(leased), Buffer.from('seq=7'));
      const completed = await jobIn(s.h, globex, 'completed');
      const dead = await jobIn(s.h, acme, 'dead');
      const cancelled = await jobIn(s.h, acme, 'cancelled');
      await s.q.createSchedule({ name: 'hourly', everySecs: 3_600, job: { kind: 'report', payload: 'p' } }, acme);
      await s.q.pause({ kindPrefix: 'mail.', scope: acme });
      await s.q.setKindLimit({ kindPrefix: 'mail', concurrency: 2 });
      return { pending, gated, leased: checkpointed, completed, dead, cancelled };
    }

    it('moves every job, schedule, pause and kind limit into an empty store as they were', async () => {
      await fill();
      const jobs = await everyJob(s);
      const schedules = await s.q.listSchedules({ scope: ANY_SCOPE });
      const pauses = await s.q.pauses();
      const limits = await s.q.kindLimits();
      const lines = await exported(s, s.h.store);
      await s.withHarness({});
      const summary = await imported(s, lines);
      assert.deepEqual(summary.written, { job: 6, schedule: 1, pause: 1, limit: 1, tenant: 0, line: 0, holder: 0 });
      assert.deepEqual(await everyJob(s), jobs);
      assert.deepEqual(await s.q.listSchedules({ scope: ANY_SCOPE }), schedules);
      assert.deepEqual(await s.q.pauses(), pauses);
      assert.deepEqual(await s.q.kindLimits(), limits);
      assert.deepEqual(await exported(s, s.h.store).then((l) => l.slice(1)), lines.slice(1));
    });

    it("keeps a leased job's fence: its holder completes it after the move, and one past its deadline is reaped", async () => {
      const held = await jobIn(s.h, acme, 'leased');
      const lapsed = await jobIn(s.h, acme, 'leased');
      const lines = await exported(s, s.h.store);
      await s.withHarness({});
      await imported(s, lines);
      const completed = await s.q.complete(held.jobId, fenceOf(held));
      assert.equal(completed.job.state, JobState.Completed);
      assert.equal(completed.job.leaseGeneration, held.leaseGeneration);
      s.h.clock.advance((lapsed.leaseDeadline ?? 0) - s.now() + SECOND);
      assert.deepEqual(await s.q.maintenance.reapExpired(), { reaped: 1, dead: 0 });
      const reaped = await s.q.show(lapsed.jobId);
      assert.equal(reaped.workerId, null);
      assert.equal(reaped.events.at(-1)?.transition, 'reaped');
      await rejects(s.q.complete(lapsed.jobId, fenceOf(lapsed)), ErrorCode.LeaseConflict);
    });

    it('refuses a store that holds jobs unless merging, which keeps what it holds and adds the rest', async () => {
      const first = await jobIn(s.h, acme, 'pending', { kind: 'k', idempotencyKey: 'same' });
      const lines = await exported(s, s.h.store);
      await s.withHarness({});
      const mine = (await s.q.enqueue({ kind: 'mine', idempotencyKey: 'same' }, acme)).job;
      const other = (await s.q.enqueue({ kind: 'other' }, globex)).job;
      await rejects(imported(s, lines), ErrorCode.FailedPrecondition, (error) =>
        assert.match(error.message, /holds 2 jobs.*--merge/),
      );
      const summary = await imported(s, lines, true);
      assert.equal(summary.skipped.job, 1, "the stream's job holds a key the store's own job holds");
      assert.deepEqual(
        (await everyJob(s)).map((j) => j.jobId),
        [mine.jobId, other.jobId].sort(),
      );
      assert.equal((await s.q.show(mine.jobId)).kind, 'mine');
      assert.equal(first.idempotencyKey, 'same');
    });

    it('changes nothing for a malformed stream: a bad line, a cut-short end, a repeated job', async () => {
      await jobIn(s.h, acme, 'pending');
      await jobIn(s.h, acme, 'leased');
      await s.q.setKindLimit({ kindPrefix: 'k', concurrency: 1 });
      const lines = await exported(s, s.h.store);
      await s.withHarness({});
      const bad = (lines[lines.length - 2] as string).replace(/"value":"../, '"value":"!!');
      for (const [stream, message] of [
        [[...lines.slice(0, -2), bad, ...lines.slice(-1)], /line \d+ /],
        [lines.slice(0, -1), /cut short/],
        [[...lines.slice(0, -1), lines[lines.length - 2] as string, lines[lines.length - 1] as string], /holds|twice/],
        [['{"format":"telha-export","version":99}', ...lines.slice(1)], /version 99/],
      ] as const) {
        await rejects(imported(s, stream), ErrorCode.InvalidArgument, (error) => assert.match(error.message, message));
        assert.deepEqual(await everyJob(s), []);
        assert.deepEqual(await s.q.kindLimits(), []);
      }
    });

    it('carries tenant limits, ordered keys and supersede keys: the moved store runs as the first would have', async () => {
      const fill = await fillKeyed(s.q);
      const lines = await exported(s, s.h.store);
      await s.withHarness({});
      const summary = await imported(s, lines);
      // Lines: `b` (Dead head and two waiting) and `m` (Leased head and two waiting); `r` holds its
      // next job only. One holder: the debounced job.
      assert.deepEqual(summary.written, { job: 12, schedule: 0, pause: 0, limit: 0, tenant: 2, line: 3, holder: 1 });
      assert.deepEqual(await exported(s, s.h.store).then((l) => l.slice(1)), lines.slice(1));
      // A second import, merging, finds every job placed and every key held: it changes nothing.
      const again = await imported(s, lines, true);
      assert.deepEqual(again.skipped, { job: 12, schedule: 0, pause: 0, limit: 0, tenant: 2, line: 3, holder: 1 });
      assert.deepEqual(await exported(s, s.h.store).then((l) => l.slice(1)), lines.slice(1));
      if (s.q.backend !== 'memory') await s.h.reopen();
      await checkKeyed(s.q, fill);
    });

    it('imports a stream of format version 1, written before tenant limits, lines and holders travelled', async () => {
      const pending = await jobIn(s.h, acme, 'pending');
      const lines = await exported(s, s.h.store);
      const v1 = [
        (lines[0] as string).replace('"version":2', '"version":1'),
        ...lines.slice(1, -1),
        (lines.at(-1) as string).replace(/,"tenant":0,"line":0,"holder":0/, ''),
      ];
      assert.notDeepEqual(v1, lines);
      await s.withHarness({});
      assert.equal((await imported(s, v1)).written.job, 1);
      assert.equal((await s.q.show(pending.jobId)).state, JobState.Pending);
    });

    it('changes nothing for a malformed line, holder or tenant limit', async () => {
      const fill = await fillKeyed(s.q);
      const lines = await exported(s, s.h.store);
      await s.withHarness({});
      const swap = (type: string, edit: (value: Record<string, unknown>) => unknown): string[] =>
        lines.map((text) => {
          const parsed = JSON.parse(text) as { type?: string; value: Record<string, unknown> };
          return parsed.type === type ? JSON.stringify({ ...parsed, value: edit(parsed.value) }) : text;
        });
      const otherJob = fill.afterReleased.jobId;
      for (const [stream, message] of [
        [swap('line', (v) => ({ ...v, ids: [] })), /has no job ids/],
        [swap('line', (v) => ({ ...v, ids: [...(v['ids'] as string[]), otherJob] })), /no job of order key/],
        [swap('line', (v) => ({ ...v, tenant: 42 })), /names no tenant/],
        [swap('holder', (v) => ({ ...v, jobId: fill.head.jobId })), /no live job of supersede key/],
        [swap('holder', (v) => ({ ...v, key: '' })), /names no key/],
        [swap('tenant', () => Buffer.from('{"tenant":"acme"}').toString('base64')), /line \d+ /],
        [[...lines.slice(0, -1), lines.at(-2) as string, lines.at(-1) as string], /repeats the holder|holds 2 holder/],
        [lines.filter((text) => !text.includes('"type":"line"')), /holds 0 line lines, its last line says 3/],
      ] as const) {
        await rejects(imported(s, stream), ErrorCode.InvalidArgument, (error) => assert.match(error.message, message));
        assert.deepEqual(await everyJob(s), []);
        assert.deepEqual(await s.q.tenantLimits(), []);
        assert.deepEqual(await s.q.blockedKeys(), []);
      }
    });

    it('takes imported idempotency keys and orders new jobs after the imported ones', async () => {
      // The source's clock ran ahead of the target's: its jobs' created_at are the target's future.
      s.h.clock.advance(3_600 * SECOND);
      const old = await jobIn(s.h, acme, 'pending', { kind: 'k', idempotencyKey: 'once' });
      const lines = await exported(s, s.h.store);
      await s.withHarness({});
      await imported(s, lines);
      const again = await s.q.enqueue({ kind: 'k', idempotencyKey: 'once' }, acme);
      assert.equal(again.created, false);
      assert.equal(again.job.jobId, old.jobId);
      const fresh = (await s.q.enqueue({ kind: 'k' }, acme)).job;
      assert.ok(fresh.createdAt > old.createdAt, 'a job enqueued after the import leases after the imported one');
      assert.equal((await s.lease(acme)).jobId, old.jobId);
    });
  });
}
