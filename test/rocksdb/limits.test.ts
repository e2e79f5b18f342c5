import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeKindLimit, encodeKindLimit, kindLimitRowKey } from '../../src/codec/kind-limits.ts';
import { CorruptRecordError } from '../../src/core/errors.ts';
import { ANY_SCOPE, tenantScope } from '../../src/core/types.ts';
import { LiveIndex } from '../../src/storage/rocksdb/live-index.ts';
import { countSeeks, liveKey } from '../support/live-index-seeks.ts';
import { rocksHarness } from '../support/backends.ts';

const acme = tenantScope('acme');

describe('kind limit rows', () => {
  it('keeps a limit as a meta row of readable JSON, and refuses a malformed one as corrupt', () => {
    const limit = { kindPrefix: 'email', concurrency: 5, rate: { count: 100, periodMs: 1_000 }, setAt: 7, by: 'ops' };
    assert.equal(kindLimitRowKey('email').toString(), 'kind-limit/email');
    const bytes = encodeKindLimit(limit);
    assert.equal(
      bytes.toString('hex'),
      '01' +
        Buffer.from(
          '{"kind_prefix":"email","concurrency":5,"rate":{"count":100,"period_ms":1000},"set_at":7,"by":"ops"}',
        ).toString('hex'),
    );
    assert.deepEqual(decodeKindLimit(bytes, 'k'), limit);
    const bad = Buffer.concat([Buffer.from([1]), Buffer.from('{"kind_prefix":"x","concurrency":0}')]);
    assert.throws(() => decodeKindLimit(bad, 'k'), CorruptRecordError);
    assert.throws(() => decodeKindLimit(Buffer.from([2]), 'k'), CorruptRecordError);
  });
});

describe('rocksdb kind limits', () => {
  it('keeps limits across a restart, counts the leased jobs again, and starts the buckets full', async () => {
    const h = await rocksHarness();
    try {
      await h.queue.enqueueBatch(
        Array.from({ length: 6 }, (_, i) => ({ kind: 'email', payload: `${i}` })),
        acme,
      );
      await h.queue.setKindLimit({ kindPrefix: 'email', concurrency: 3, rate: '2/1m', by: 'ops' });
      assert.equal((await h.queue.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 10 })).length, 2);
      const queue = await h.reopen();
      const [limit] = await queue.kindLimits();
      assert.ok(limit);
      assert.deepEqual(
        [limit.kindPrefix, limit.concurrency, limit.rate, limit.by, limit.leased, limit.tokens],
        ['email', 3, { count: 2, periodMs: 60_000 }, 'ops', 2, 2],
      );
      // A restart refills the bucket (documented): two tokens, but room for one under the concurrency.
      assert.equal((await queue.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 10 })).length, 1);
      await queue.clearKindLimit('email');
      const again = await h.reopen();
      assert.deepEqual(await again.kindLimits(), []);
      assert.equal((await again.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 10 })).length, 3);
    } finally {
      await h.close();
    }
  });
});

describe('live index kind limits', () => {
  const seeks = countSeeks();

  it('claims past a full lane of 20,000 ready jobs at the head with a handful of seeks', () => {
    const index = new LiveIndex();
    const limit = { concurrency: 1, rate: null, setAt: 0, by: 'test' };
    index.setLimits([{ kindPrefix: 'bulk', ...limit }]);
    // Ten tenants' jobs of the limited lane, ahead of the open work in key order.
    for (let t = 0; t < 10; t++) {
      for (let n = 0; n < 2_000; n++) {
        index.addPending({ jobId: `t${t}-${n}`, key: liveKey(`t${t}`, n), kind: `bulk.${t % 3}`, notBefore: null }, 0);
      }
    }
    index.addPending({ jobId: 'open-0', key: liveKey('t0', 5_000), kind: 'mail', notBefore: null }, 0);
    index.addPending({ jobId: 'open-1', key: liveKey('t9', 5_000), kind: 'mail', notBefore: null }, 0);
    const [head] = index.takeReady(null, null, 1, 0);
    assert.ok(head !== undefined && head.kind.startsWith('bulk'));
    index.addLeased({ jobId: head.jobId, key: head.key, kind: head.kind, deadline: 10 });
    index.settleClaim([head], new Set([head.jobId]));

    seeks.count = 0;
    const open = index.takeReady(null, null, 10, 0);
    assert.deepEqual(open.map((e) => e.jobId).sort(), ['open-0', 'open-1']);
    assert.ok((open[0]?.key ?? '') < (open[1]?.key ?? ''), 'in key order');
    assert.ok(seeks.count > 0 && seeks.count < 30, `${seeks.count} seeks for one key-order claim`);

    index.addPending({ jobId: 'open-2', key: liveKey('t3', 5_000), kind: 'mail', notBefore: null }, 0);
    index.addPending({ jobId: 'open-3', key: liveKey('t5', 5_000), kind: 'mail', notBefore: null }, 0);
    seeks.count = 0;
    assert.equal(index.takeReadyFair(null, 10, 0, null).taken.length, 2);
    assert.ok(seeks.count < 60, `${seeks.count} seeks for one fair claim`);

    // The lane frees: its jobs are next again, one (its room) per claim.
    index.removeLeased(head.jobId);
    assert.equal(index.takeReady(null, null, 10, 0).length, 1);
  });
});
