/**
 * The live index jumps over paused work: a claim past a large paused backlog costs a seek per
 * paused scope, not a step per paused job. Counted by the B-tree lookups the claim makes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LiveIndex } from '../../src/storage/rocksdb/live-index.ts';
import { countSeeks, liveKey, scopeOf } from '../support/live-index-seeks.ts';

describe('live index pauses', () => {
  const seeks = countSeeks();

  it('claims past 20,000 paused jobs in ten scopes with a handful of seeks', () => {
    const index = new LiveIndex();
    const tenants = Array.from({ length: 11 }, (_, i) => `t${i}`).sort((a, b) => (scopeOf(a) < scopeOf(b) ? -1 : 1));
    const open = tenants.at(-1) as string;
    const paused = tenants.slice(0, -1);
    for (const tenant of paused) {
      for (let n = 0; n < 2_000; n++) {
        index.addPending({ jobId: `${tenant}-${n}`, key: liveKey(tenant, n), kind: 'k', notBefore: null }, 0);
      }
    }
    index.addPending({ jobId: 'open-0', key: liveKey(open, 0), kind: 'k', notBefore: null }, 0);
    index.setPauses(paused.map((tenant) => ({ scope: scopeOf(tenant), kindPrefix: 'k' })));

    seeks.count = 0;
    assert.deepEqual(
      index.takeReady(null, null, 10, 0).map((e) => e.jobId),
      ['open-0'],
    );
    assert.ok(seeks.count > 0 && seeks.count < 50, `${seeks.count} seeks for one key-order claim`);

    index.addPending({ jobId: 'open-1', key: liveKey(open, 1), kind: 'k', notBefore: null }, 0);
    seeks.count = 0;
    assert.deepEqual(
      index.takeReadyFair(null, 10, 0, null).taken.map((e) => e.jobId),
      ['open-1'],
    );
    assert.ok(seeks.count < 100, `${seeks.count} seeks for one fair claim`);

    // Paused everywhere: the kind tree is not looked at.
    index.setPauses([{ scope: null, kindPrefix: 'k' }]);
    seeks.count = 0;
    assert.deepEqual(index.takeReady(null, null, 10, 0), []);
    assert.ok(seeks.count < 5, `${seeks.count} seeks with the kind paused everywhere`);

    index.setPauses([]);
    assert.equal(index.takeReady(null, null, 100_000, 0).length, 20_000);
  });
});
