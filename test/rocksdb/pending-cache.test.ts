/**
 * The RocksDB store keeps recently written Pending records in memory so a
 * claim need not read them back. With a budget too small for every job, claims
 * must hand out exactly the records a store without the cache would: cached,
 * left out (cache full) and never cached (too large) alike, across a reopen too.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { makeConfig } from '../../src/core/config.ts';
import { lease as leaseTransition, type RetryPolicy } from '../../src/core/transitions.ts';
import { ANY_SCOPE, JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { draftJob } from '../../src/core/drafts.ts';
import { newJobId } from '../../src/codec/job-ids.ts';
import { RocksJobStore } from '../../src/storage/rocksdb/rocks-store.ts';
import { tempDir } from '../support/backends.ts';

const acme = tenantScope('acme');
const NOW = 1_767_225_600_000_000;
/** Holds ~100 small records; one over 1 KiB (1/64 of it) is never cached. */
const BUDGET = 64 * 1024;
const JOBS = 200;
const payloadOf = (i: number): Buffer => Buffer.alloc(i % 10 === 0 ? 2048 : 8, i);

describe('rocksdb pending-record cache', () => {
  it('claims the right records whether cached, left out of a full cache or too large to cache, and stays within its budget', async () => {
    const dir = tempDir();
    try {
      let store = await RocksJobStore.open({ path: dir, pendingCacheBytes: BUDGET });
      // 180 small jobs (~600 B each counted: more than the budget holds) and every 10th one too large to cache.
      const drafts = Array.from({ length: JOBS }, (_, i) =>
        draftJob(
          acme,
          { kind: 'k', payload: payloadOf(i) },
          { now: NOW, fieldPrefix: '', maxPayloadBytes: 1 << 20, jobId: newJobId() },
        ),
      );
      const inserted = await store.insert(drafts, NOW);
      assert.ok(store.pendingCache.bytes <= BUDGET, `${store.pendingCache.bytes} bytes cached`);
      assert.ok(store.pendingCache.records > 0 && store.pendingCache.records < 180);

      const policy: RetryPolicy = { config: makeConfig({}).jobs };
      const lease = (record: JobRecord): JobRecord => leaseTransition(record, 'w1', NOW, policy);
      const firstHalf = await store.claim({ scope: ANY_SCOPE, kinds: null, now: NOW, limit: 100, lease });
      await store.close();
      store = await RocksJobStore.open({ path: dir, pendingCacheBytes: BUDGET });
      const secondHalf = await store.claim({ scope: acme, kinds: null, now: NOW, limit: 100, lease });
      const claimed = [...firstHalf, ...secondHalf];

      assert.deepEqual(
        claimed.map((r) => r.jobId),
        inserted.map((o) => o.record.jobId),
        'FIFO order, each job once',
      );
      for (const [i, record] of claimed.entries()) {
        assert.equal(record.state, JobState.Leased);
        assert.deepEqual(Buffer.from(record.payload), payloadOf(i));
        assert.deepEqual(
          (await store.get(record.jobId))?.events.map((e) => e.transition),
          ['enqueued', 'leased'],
        );
      }
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
