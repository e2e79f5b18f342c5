import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeyedLock } from '../../src/storage/rocksdb/keyed-lock.ts';

/** Resolves after every microtask and immediate queued so far has run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('KeyedLock', () => {
  it('makes a second holder of any shared key wait for the first, whichever path took it', async () => {
    const locks = new KeyedLock();
    const order: string[] = [];
    const releaseFree = await locks.acquire(['a', 'b', 'b']);
    const overlapping = locks.acquire(['c', 'b']).then((release) => {
      order.push('second');
      return release;
    });
    const disjoint = locks.acquire(['d']).then((release) => {
      order.push('disjoint');
      return release;
    });
    await settle();
    assert.deepEqual(order, ['disjoint'], 'only the holder of no shared key got through');
    order.push('first released');
    releaseFree();
    (await overlapping)();
    (await disjoint)();
    assert.deepEqual(order, ['disjoint', 'first released', 'second']);
    // Everything was released: the same keys are free again at once.
    (await locks.acquire(['a', 'b', 'c', 'd']))();
  });

  it('serves overlapping sets in arrival order without deadlock', async () => {
    const locks = new KeyedLock();
    const order: number[] = [];
    const first = await locks.acquire(['x']);
    const waiters = [
      ['x', 'y'],
      ['y', 'x'],
    ].map((keys, i) =>
      locks.acquire(keys).then((release) => {
        order.push(i);
        release();
      }),
    );
    await settle();
    assert.deepEqual(order, [], 'both waiters need the held key');
    first();
    await Promise.all(waiters);
    assert.deepEqual(order, [0, 1]);
  });
});
