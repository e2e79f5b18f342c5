/**
 * The live index jumps over paused work: a claim past a large paused backlog costs a seek per
 * paused scope, not a step per paused job. Counted by the B-tree lookups the claim makes.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import sortedBtree from 'sorted-btree';
import { scopeBytes } from '../../src/codec/keys.ts';
import { tenantScope } from '../../src/core/types.ts';
import { LiveIndex } from '../../src/storage/rocksdb/live-index.ts';

const BTree = sortedBtree.default;
const proto = BTree.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
const SEEKS = ['nextHigherPair', 'getPairOrNextHigher', 'nextHigherKey', 'minKey', 'entries', 'forRange'] as const;

function scopeOf(tenant: string): string {
  return scopeBytes(tenantScope(tenant)).toString('latin1');
}

function key(tenant: string, n: number): string {
  const tail = Buffer.alloc(24);
  tail[1] = 128;
  tail.writeUInt32BE(n, 6);
  tail.writeUInt32BE(n, 20);
  return scopeOf(tenant) + tail.toString('latin1');
}

describe('live index pauses', () => {
  let seeks = 0;
  const originals = new Map<string, (...args: unknown[]) => unknown>();
  beforeEach(() => {
    for (const name of SEEKS) {
      const original = proto[name] as (...args: unknown[]) => unknown;
      originals.set(name, original);
      proto[name] = function (this: unknown, ...args: unknown[]) {
        seeks++;
        return original.apply(this, args);
      };
    }
  });
  afterEach(() => {
    for (const [name, original] of originals) proto[name] = original;
  });

  it('claims past 20,000 paused jobs in ten scopes with a handful of seeks', () => {
    const index = new LiveIndex();
    const tenants = Array.from({ length: 11 }, (_, i) => `t${i}`).sort((a, b) => (scopeOf(a) < scopeOf(b) ? -1 : 1));
    const open = tenants.at(-1) as string;
    const paused = tenants.slice(0, -1);
    for (const tenant of paused) {
      for (let n = 0; n < 2_000; n++) {
        index.addPending({ jobId: `${tenant}-${n}`, key: key(tenant, n), kind: 'k', notBefore: null }, 0);
      }
    }
    index.addPending({ jobId: 'open-0', key: key(open, 0), kind: 'k', notBefore: null }, 0);
    index.setPauses(paused.map((tenant) => ({ scope: scopeOf(tenant), kindPrefix: 'k' })));

    seeks = 0;
    assert.deepEqual(
      index.takeReady(null, null, 10, 0).map((e) => e.jobId),
      ['open-0'],
    );
    assert.ok(seeks > 0 && seeks < 50, `${seeks} seeks for one key-order claim`);

    index.addPending({ jobId: 'open-1', key: key(open, 1), kind: 'k', notBefore: null }, 0);
    seeks = 0;
    assert.deepEqual(
      index.takeReadyFair(null, 10, 0, null).taken.map((e) => e.jobId),
      ['open-1'],
    );
    assert.ok(seeks < 100, `${seeks} seeks for one fair claim`);

    // Paused everywhere: the kind tree is not looked at.
    index.setPauses([{ scope: null, kindPrefix: 'k' }]);
    seeks = 0;
    assert.deepEqual(index.takeReady(null, null, 10, 0), []);
    assert.ok(seeks < 5, `${seeks} seeks with the kind paused everywhere`);

    index.setPauses([]);
    assert.equal(index.takeReady(null, null, 100_000, 0).length, 20_000);
  });
});
