/**
 * With batches written on the write thread, a batch is in flight while the
 * main thread goes on serving: nothing it carries may be visible before it
 * lands (the transitions log's head, its entries), and everything must be once
 * it has.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { draftJob } from '../../src/core/drafts.ts';
import { newJobId } from '../../src/codec/job-ids.ts';
import { ANY_SCOPE, tenantScope } from '../../src/core/types.ts';
import { RocksJobStore } from '../../src/storage/rocksdb/rocks-store.ts';
import { tempDir } from '../support/backends.ts';

const acme = tenantScope('acme');
const NOW = 1_767_225_600_000_000;
const EVERYTHING = { scope: ANY_SCOPE, kindPrefix: '', jobId: null };

describe('rocksdb write thread', () => {
  it('shows a batch in the transitions log only once it has landed', async () => {
    const dir = tempDir();
    try {
      const store = await RocksJobStore.open({ path: dir, writeThread: true, writeThreadMinOps: 0 });
      try {
        const head = await store.logHead();
        const batches = store.stats().batches;
        const drafts = Array.from({ length: 50 }, (_, i) =>
          draftJob(
            acme,
            { kind: 'k', payload: Buffer.from(String(i)) },
            { now: NOW, fieldPrefix: '', maxPayloadBytes: 1 << 20, jobId: newJobId() },
          ),
        );
        const units = store.stats().units;
        const inserting = store.insert(drafts, NOW);
        while (store.stats().units === units) await Promise.resolve();
        // Staged: the group commit's flush is the next immediate, this one right after it. Here the
        // batch is on the write thread, and its landing a message this thread has not yet taken
        // (messages are taken in the event loop's poll phase, not between immediates).
        await new Promise<void>((resolve) => setImmediate(resolve));
        assert.equal(store.stats().batches, batches, 'the batch landed before the check');
        assert.equal(await store.logHead(), head, 'the head moved before the batch landed');
        await inserting;
        const page = await store.readLog(head, 100, EVERYTHING);
        assert.equal(page.entries.length, 50);
        assert.equal(await store.logHead(), page.position);
        assert.deepEqual(
          page.entries.map((e) => e.job.jobId),
          drafts.map((d) => d.jobId),
        );
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lets a process that never closed its store exit once nothing is in flight', { timeout: 60_000 }, async () => {
    const dir = tempDir();
    try {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', fileURLToPath(new URL('../support/unclosed-store-child.ts', import.meta.url)), dir],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      assert.equal(output, 'written\n');
      assert.equal(code, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
