/** Conformance cases: the transitions log every transition appends to, which Watch reads. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  LOG_RESULT_BYTES,
  resultBytesOf,
  transitionOf,
  type LogEntry,
  type LogFilter,
} from '../../core/transitions-log.ts';
import { ANY_SCOPE, JobState, type ScopeFilter } from '../../core/types.ts';
import { fenceOf } from './harness.ts';
import { acme, ErrorCode, globex, readLog, rejects, SECOND, type Suite } from './context.ts';

const everything: LogFilter = { scope: ANY_SCOPE, kindPrefix: '', jobId: null };

function only(scope: ScopeFilter, kindPrefix = '', jobId: string | null = null): LogFilter {
  return { scope, kindPrefix, jobId };
}

export function transitionsLogCases(s: Suite): void {
  const transitions = (entries: readonly LogEntry[]): string[] =>
    entries.map((e) => `${e.job.tenant ?? 'system'} ${e.job.kind} ${transitionOf(e.job).transition}`);

  describe('transitions log', () => {
    it("tells the feed's readers of a completion by the time the call that made it returns", async () => {
      const job = await s.q.enqueue({ kind: 'log.told' }, acme).then(() => s.lease(acme, 'w1', ['log.told']));
      const head = await s.q.feed.head();
      let told = 0;
      const unsubscribe = s.q.feed.subscribe(() => told++);
      try {
        await s.q.complete(job.jobId, fenceOf(job), { result: new TextEncoder().encode('7') });
        // No timer, no poll: a reader parked on the feed (client.result's Watch) was woken by the commit.
        assert.ok(told >= 1, 'the feed said nothing of the completion');
        const { entries } = await readLog(s.q, head, only(acme, 'log.told', job.jobId), 1);
        assert.equal(transitionOf(entries[0]?.job ?? job).transition, 'completed');
        assert.equal(new TextDecoder().decode(entries[0]?.job.result ?? new Uint8Array()), '7');
      } finally {
        unsubscribe();
      }
    });

    it('says in a completion’s entry how big a result it leaves out, and that a job completed without one', async () => {
      const kind = 'log.result-sizes';
      const head = await s.q.feed.head();
      await s.q.enqueueBatch([{ kind }, { kind }, { kind }], acme);
      const sizes = [null, LOG_RESULT_BYTES, LOG_RESULT_BYTES + 1];
      for (const size of sizes) {
        const job = await s.lease(acme, 'w1', [kind]);
        const result = size === null ? {} : { result: new Uint8Array(size).fill(7) };
        await s.q.complete(job.jobId, fenceOf(job), result);
      }
      const { entries } = await readLog(s.q, head, { ...only(acme, kind), states: new Set([JobState.Completed]) }, 3);
      assert.deepEqual(
        entries.map(({ job }) => ({ carried: job.result?.byteLength ?? null, resultBytes: resultBytesOf(job) })),
        [
          { carried: null, resultBytes: 0 },
          { carried: LOG_RESULT_BYTES, resultBytes: LOG_RESULT_BYTES },
          { carried: null, resultBytes: LOG_RESULT_BYTES + 1 },
        ],
      );
      // Entries of jobs that are not done say nothing of a result: there is none to wait for.
      const enqueued = (await readLog(s.q, head, only(acme, kind), 1)).entries[0]?.job;
      assert.equal(enqueued === undefined ? undefined : resultBytesOf(enqueued), null);
    });

    it('appends each transition in the write that makes it, in one order, and no lease extension', async () => {
      const head = await s.q.feed.head();
      await s.q.enqueue({ kind: 'log.a', payload: 'secret' }, acme);
      await s.q.enqueue({ kind: 'log.b' }, globex);
      const job = await s.lease(acme, 'w1', ['log.a']);
      await s.q.heartbeat(job.jobId, fenceOf(job));
      await s.q.complete(job.jobId, fenceOf(job), { result: new TextEncoder().encode('{"ok":true}') });
      const { entries, position } = await readLog(s.q, head, everything, 4);
      assert.deepEqual(transitions(entries), [
        'acme log.a enqueued',
        'globex log.b enqueued',
        'acme log.a leased',
        'acme log.a completed',
      ]);
      const done = entries[3]?.job;
      assert.equal(done?.payload.byteLength, 0, 'an entry carries no payload');
      assert.equal(new TextDecoder().decode(done?.result ?? new Uint8Array()), '{"ok":true}');
      assert.ok(new Set(entries.map((e) => e.position)).size === 4, 'each entry has its own position');
      assert.equal((await s.q.feed.read(position, 10, everything)).entries.length, 0, 'nothing after the last');
      // Resuming after any entry yields exactly the ones after it.
      const after = entries[1]?.position as string;
      assert.deepEqual(transitions((await readLog(s.q, after, everything, 2)).entries), transitions(entries.slice(2)));
    });

    it("filters by scope, kind prefix and job, passing over the others' entries", async () => {
      const head = await s.q.feed.head();
      const { job: mine } = await s.q.enqueue({ kind: 'log.mine' }, acme);
      await s.q.enqueue({ kind: 'log.theirs' }, globex);
      await s.q.enqueue({ kind: 'other' }, acme);
      await s.q.cancel(mine.jobId, {}, acme);
      assert.deepEqual(transitions((await readLog(s.q, head, only(acme), 3)).entries), [
        'acme log.mine enqueued',
        'acme other enqueued',
        'acme log.mine cancelled',
      ]);
      assert.deepEqual(transitions((await readLog(s.q, head, only(ANY_SCOPE, 'log.'), 3)).entries), [
        'acme log.mine enqueued',
        'globex log.theirs enqueued',
        'acme log.mine cancelled',
      ]);
      const { entries, position } = await readLog(s.q, head, only(acme, '', mine.jobId), 2);
      assert.deepEqual(transitions(entries), ['acme log.mine enqueued', 'acme log.mine cancelled']);
      // The position passed the entries that did not match: the next read starts after them all.
      assert.equal((await s.q.feed.read(position, 10, everything)).entries.length, 0);
    });

    it("filters by the state each transition left its job in: a job's outcome and nothing before it", async () => {
      const head = await s.q.feed.head();
      const { job: cancelled } = await s.q.enqueue({ kind: 'log.outcome.cancel' }, acme);
      await s.q.enqueue({ kind: 'log.outcome.done' }, acme);
      const done = await s.lease(acme, 'w1', ['log.outcome.done']);
      await s.q.complete(done.jobId, fenceOf(done));
      await s.q.cancel(cancelled.jobId, {}, acme);
      const outcomes = { ...only(acme, 'log.outcome.'), states: new Set([JobState.Completed, JobState.Cancelled]) };
      assert.deepEqual(transitions((await readLog(s.q, head, outcomes, 2)).entries), [
        'acme log.outcome.done completed',
        'acme log.outcome.cancel cancelled',
      ]);
    });

    it('refuses a garbled position, or one another store made, with invalid_argument naming resume_token', async () => {
      for (const token of ['', 'nonsense', 'abc123:7', 'p1.x.1', 'm1.x.y.z']) {
        await rejects(s.q.feed.read(token, 10, everything), ErrorCode.InvalidArgument, (e) =>
          assert.match(e.message, /resume_token/),
        );
      }
      const head = await s.q.feed.head();
      const foreign = head.replace(/^([a-z0-9]+)\.([^.]+)\./, '$1.ffffffffffff.');
      await rejects(s.q.feed.read(foreign, 10, everything), ErrorCode.InvalidArgument, (e) =>
        assert.match(e.message, /another store/),
      );
    });

    it('prunes entries past watch.retain_secs and refuses a position whose next entries went', async () => {
      await s.withHarness({ config: { watch: { retain_secs: 60 } } });
      const head = await s.q.feed.head();
      await s.q.enqueue({ kind: 'old' }, acme);
      const { position: afterOld } = await readLog(s.q, head, everything, 1);
      s.h.clock.advanceSeconds(61);
      await s.q.enqueue({ kind: 'new' }, acme);
      await s.q.maintenance.prune();
      await rejects(s.q.feed.read(head, 10, everything), ErrorCode.FailedPrecondition, (e) =>
        assert.match(e.message, /retention/),
      );
      assert.deepEqual(transitions((await readLog(s.q, afterOld, everything, 1)).entries), ['acme new enqueued']);
    });

    it('prunes the oldest entries past the count bound', async () => {
      const head = await s.q.feed.head();
      await s.q.enqueueBatch(
        Array.from({ length: 5 }, (_, i) => ({ kind: `n${i}` })),
        acme,
      );
      const { entries } = await readLog(s.q, head, everything, 5);
      const pruned = await s.h.store.pruneLog({ before: s.now() - 3_600 * SECOND, maxEntries: 2, limit: 100 });
      assert.ok(pruned >= 1 && pruned <= 3, `pruned ${pruned}`);
      await rejects(s.q.feed.read(head, 10, everything), ErrorCode.FailedPrecondition, (e) =>
        assert.match(e.message, /retention/),
      );
      const kept = await readLog(s.q, entries[2]?.position as string, everything, 2);
      assert.deepEqual(transitions(kept.entries), ['acme n3 enqueued', 'acme n4 enqueued']);
    });

    it('keeps its entries and positions across a reopen', async () => {
      const head = await s.q.feed.head();
      await s.q.enqueue({ kind: 'before' }, acme);
      const { entries } = await readLog(s.q, head, everything, 1);
      // The memory reference does not survive a reopen; durable stores must keep the log.
      const queue = s.h.store.backend === 'memory' ? s.q : await s.h.reopen();
      await queue.enqueue({ kind: 'after' }, acme);
      assert.deepEqual(transitions((await readLog(s.q, head, everything, 2)).entries), [
        'acme before enqueued',
        'acme after enqueued',
      ]);
      assert.deepEqual(transitions((await readLog(s.q, entries[0]?.position as string, everything, 1)).entries), [
        'acme after enqueued',
      ]);
    });
  });
}
