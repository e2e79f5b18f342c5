/**
 * A record the encoder refuses (its last check, which validation normally keeps unreachable) must
 * change nothing. `updateMany` writes its items in one batch, each succeeding or failing alone: had
 * the refused item's delete of its old key gone into the batch without the new row, the job would
 * be lost when the other items are written. A claim fails whole: the records staged before the
 * refused one must not move the counters, which the next batch would write.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { makeConfig } from '../../src/core/config.ts';
import { draftJob } from '../../src/core/drafts.ts';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { lease, type RetryPolicy } from '../../src/core/transitions.ts';
import { ANY_SCOPE, JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { newJobId } from '../../src/codec/job-ids.ts';
import { RocksJobStore } from '../../src/storage/rocksdb/rocks-store.ts';
import { tempDir } from '../support/backends.ts';

const acme = tenantScope('acme');
const NOW = 1_767_225_600_000_000;
const policy: RetryPolicy = { config: makeConfig({}).jobs };
/** Every ready job, leased to another worker. */
const claimAll = (store: RocksJobStore): Promise<JobRecord[]> =>
  store.claim({ scope: ANY_SCOPE, kinds: null, now: NOW, limit: 10, lease: (r) => lease(r, 'w2', NOW, policy) });
const draft = (tag: string) =>
  draftJob(
    acme,
    { kind: 'k', payload: Buffer.from(tag) },
    { now: NOW, fieldPrefix: '', maxPayloadBytes: 1024, jobId: newJobId() },
  );

describe('rocksdb writes of a record the encoder refuses', () => {
  it('a claim that meets one fails whole and moves no counter', async () => {
    const dir = tempDir();
    try {
      let store = await RocksJobStore.open({ path: dir });
      await store.insert([draft('a'), draft('b')], NOW);
      let leasing = 0;
      // The second job's lease carries a worker id that would not read back.
      const refusing = (record: JobRecord): JobRecord => lease(record, leasing++ === 1 ? 'w\uD800' : 'w1', NOW, policy);
      await assert.rejects(
        store.claim({ scope: ANY_SCOPE, kinds: null, now: NOW, limit: 10, lease: refusing }),
        (error: unknown) => error instanceof TelhaError && error.code === ErrorCode.Internal,
      );
      // Another write flushes whatever counters are dirty.
      await store.insert([draft('c')], NOW);
      const counted = async (): Promise<Map<JobState, number>> =>
        new Map((await store.counts(ANY_SCOPE)).map((row) => [row.state, row.count]));
      assert.deepEqual(await counted(), new Map([[JobState.Pending, 3]]));
      // The jobs the failed claim took are claimable again, each once.
      const claimed = await claimAll(store);
      assert.equal(new Set(claimed.map((r) => r.jobId)).size, 3);
      assert.deepEqual(await counted(), new Map([[JobState.Leased, 3]]));
      await store.close();
      store = await RocksJobStore.open({ path: dir });
      assert.deepEqual(await counted(), new Map([[JobState.Leased, 3]]), 'after a reopen');
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an item the encoder refuses changes nothing while the items around it are written', async () => {
    const dir = tempDir();
    try {
      let store = await RocksJobStore.open({ path: dir });
      const drafts = ['a', 'b', 'c'].map(draft);
      const [a, b, c] = (await store.insert(drafts, NOW)).map((o) => o.record.jobId) as [string, string, string];
      const leaseBy = (workerId: string) => (current: JobRecord) => ({
        record: lease(current, workerId, NOW, policy),
      });

      // The middle item moves its job to another key (Pending to Leased) with a worker id that
      // would not read back: a lone surrogate.
      const results = await store.updateMany(
        [
          { jobId: a, change: leaseBy('w1') },
          { jobId: b, change: leaseBy('w\uD800') },
          { jobId: c, change: leaseBy('w1') },
        ],
        NOW,
      );
      assert.deepEqual(
        results.map((r) => r.ok),
        [true, false, true],
      );
      const failed = results[1];
      assert.ok(failed !== undefined && !failed.ok);
      assert.ok(failed.error instanceof TelhaError && failed.error.code === ErrorCode.Internal, String(failed.error));

      const check = async (when: string): Promise<void> => {
        assert.equal((await store.get(a))?.state, JobState.Leased, `${when}: a leased`);
        assert.equal((await store.get(c))?.state, JobState.Leased, `${when}: c leased`);
        const kept = await store.get(b);
        assert.equal(kept?.state, JobState.Pending, `${when}: b as it was`);
        assert.deepEqual(
          kept?.events.map((e) => e.transition),
          ['enqueued'],
        );
        const counts = new Map((await store.counts(ANY_SCOPE)).map((row) => [row.state, row.count]));
        assert.equal(counts.get(JobState.Pending), 1, `${when}: one Pending counted`);
        assert.equal(counts.get(JobState.Leased), 2, `${when}: two Leased counted`);
      };
      await check('before a reopen');
      await store.close();
      store = await RocksJobStore.open({ path: dir });
      await check('after a reopen');
      const claimed = await claimAll(store);
      assert.deepEqual(
        claimed.map((r) => r.jobId),
        [b],
        'b is claimable, and only b',
      );
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
