import assert from 'node:assert/strict';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ManualClock } from '../../src/core/clock.ts';
import { makeConfig } from '../../src/core/config.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { openQueue } from '../../src/open.ts';
import { RocksDatabase } from '../../src/storage/rocksdb/database.ts';
import { fenceOf } from '../../src/testing/conformance/harness.ts';
import { rocksHarness, tempDir } from '../support/backends.ts';

const acme = tenantScope('acme');

/** A child process running `test/support/<script>` with `args`, its stdout piped; `exited` resolves with its signal. */
function startChild(
  script: string,
  args: readonly string[],
): {
  child: ChildProcessByStdio<null, Readable, null>;
  exited: Promise<NodeJS.Signals | null>;
} {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL(`../support/${script}`, import.meta.url)), ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  return { child, exited };
}

describe('rocksdb durability', () => {
  it('finds every acknowledged job, lease, index and counter after a reopen', async () => {
    const h = await rocksHarness();
    try {
      const q = h.queue;
      const now = (): number => h.clock.now();
      const pending = await q.enqueue({ kind: 'p', idempotencyKey: 'idem' }, acme);
      const gated = await q.enqueue({ kind: 'g', delayMs: 60_000 }, acme);
      await q.enqueue({ kind: 'l' }, acme);
      const leased = await q.leaseNext({ workerId: 'w1', kinds: ['l'], scope: acme });
      await q.enqueue({ kind: 'c' }, acme);
      const toComplete = await q.leaseNext({ workerId: 'w1', kinds: ['c'], scope: acme });
      assert.ok(leased && toComplete);
      await q.complete(toComplete.jobId, fenceOf(toComplete));
      const countsBefore = await q.counts();
      const createdBefore = (await q.show(gated.job.jobId)).createdAt;

      const reopened = await h.reopen();
      assert.deepEqual(await reopened.counts(), countsBefore);
      assert.deepEqual(await reopened.show(pending.job.jobId), pending.job);
      assert.equal((await reopened.show(toComplete.jobId)).state, JobState.Completed);
      const again = await reopened.enqueue({ kind: 'p', idempotencyKey: 'idem' }, acme);
      assert.equal(again.created, false, 'the idempotency index survived');
      // created_at keeps growing across a reopen, even with the clock set back.
      h.clock.set(now() - 1_000_000_000);
      const later = await reopened.enqueue({ kind: 'x' }, acme);
      assert.ok(later.job.createdAt > createdBefore);
      h.clock.set(now() + 1_000_000_000);
      // The live index was rebuilt: the gate still holds, the lease is still fenced and still reapable.
      assert.equal(await reopened.leaseNext({ workerId: 'w2', kinds: ['g'], scope: acme }), null);
      await assert.rejects(reopened.complete(leased.jobId, { workerId: 'w2', leaseGeneration: 1 }));
      await reopened.heartbeat(leased.jobId, fenceOf(leased));
      h.clock.advanceSeconds(60);
      assert.equal((await reopened.leaseNext({ workerId: 'w2', kinds: ['g'], scope: acme }))?.jobId, gated.job.jobId);
      assert.deepEqual(await reopened.maintenance.reapExpired(), { reaped: 1, dead: 0 });
    } finally {
      await h.close();
    }
  });

  it('replays a write-ahead log written compressed, as releases before the uncompressed log wrote it', async () => {
    const dir = tempDir();
    const keys = 2_000;
    try {
      const { child, exited } = startChild('compressed-wal-child.ts', [dir, 'jobs', String(keys)]);
      for await (const line of createInterface({ input: child.stdout })) {
        if (line === 'written') child.kill('SIGKILL');
      }
      assert.equal(await exited, 'SIGKILL');
      // The keys are in the log alone: no table file was written, so only a replay can bring them back.
      const files = readdirSync(dir);
      assert.ok(files.some((name) => name.endsWith('.log') && statSync(join(dir, name)).size > 0));
      assert.ok(!files.some((name) => name.endsWith('.sst')), 'nothing was flushed to a table file');

      const db = await RocksDatabase.open(dir, ['jobs']);
      try {
        const jobs = db.column('jobs');
        for (const i of [0, keys / 2, keys - 1]) {
          assert.equal((await db.get(jobs, Buffer.from(`key-${i}`)))?.toString(), `value-${i}`.repeat(10));
        }
        const found = new Set<string>();
        for await (const [key] of db.scan(jobs, {})) found.add(key.toString());
        assert.equal(found.size, keys);
      } finally {
        await db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const [durability, writes] of [
    ['process', 'inline'],
    ['fsync', 'inline'],
    ['process', 'thread'],
    ['fsync', 'thread'],
  ] as const) {
    it(`keeps every write a SIGKILLed process had acknowledged (durability ${durability}, batches written ${writes === 'thread' ? 'on the write thread' : 'inline'})`, async () => {
      const dir = tempDir();
      try {
        const { child, exited } = startChild('writer-child.ts', [dir, durability, writes]);
        const enqueued: string[] = [];
        const completed: string[] = [];
        for await (const line of createInterface({ input: child.stdout })) {
          const [what, id] = line.split(' ');
          if (what === 'enqueued' && id) enqueued.push(id);
          if (what === 'completed' && id) completed.push(id);
          if (enqueued.length >= 400) child.kill('SIGKILL');
        }
        assert.equal(await exited, 'SIGKILL');
        assert.ok(completed.length > 0);

        const clock = new ManualClock();
        const queue = await openQueue({
          config: makeConfig({ storage: { path: dir }, retention: { enabled: false } }),
          clock,
          services: false,
        });
        try {
          for (const id of enqueued) await queue.show(id);
          for (const id of completed) assert.equal((await queue.show(id)).state, JobState.Completed);
          const total = (await queue.counts()).reduce((n, row) => n + row.count, 0);
          assert.ok(total >= enqueued.length);
        } finally {
          await queue.close();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
