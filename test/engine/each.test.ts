import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eachOnItsOwn } from '../../src/engine/each.ts';
import { itemFailed, itemOk } from '../../src/core/types.ts';

describe('eachOnItsOwn', () => {
  it('answers a failed check in place and applies the rest together, in order', async () => {
    const applied: number[][] = [];
    const results = await eachOnItsOwn(
      [1, -2, 3, -4, 5],
      (n) => {
        if (n < 0) throw new RangeError(`negative: ${n}`);
        return n * 10;
      },
      (prepared) => {
        applied.push([...prepared]);
        return Promise.resolve(
          prepared.map((p) => (p === 30 ? itemFailed<string>(new Error('thirty')) : itemOk(`v${p}`))),
        );
      },
    );
    assert.deepEqual(applied, [[10, 30, 50]]);
    assert.deepEqual(
      results.map((r) => (r.ok ? r.value : r.error.message)),
      ['v10', 'negative: -2', 'thirty', 'negative: -4', 'v50'],
    );
  });

  it('does not call apply when every item fails its check', async () => {
    let calls = 0;
    const results = await eachOnItsOwn(
      ['a'],
      () => {
        throw new Error('no');
      },
      () => {
        calls++;
        return Promise.resolve([]);
      },
    );
    assert.equal(calls, 0);
    assert.equal(results[0]?.ok, false);
  });
});
