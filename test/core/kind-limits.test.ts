/** The kind-limit rule and the token bucket of `core/kind-limits.ts`, as pure functions. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fairPick } from '../../src/core/fair-order.ts';
import {
  configKindLimits,
  LaneBudget,
  laneMayServe,
  limitLane,
  nextTokenAt,
  pickWithinLimits,
  refillBucket,
  takeTokens,
  type KindLimit,
} from '../../src/core/kind-limits.ts';

const SECOND = 1_000_000;

function limit(kindPrefix: string, concurrency: number | null, rate: KindLimit['rate'] = null): KindLimit {
  return { kindPrefix, concurrency, rate, setAt: 0, by: 'test' };
}

describe('kind limits, the pure rule', () => {
  it('puts a kind in the lane of its longest covering prefix, a system: kind only by a system: prefix', () => {
    const limits = [limit('e', 1), limit('email', 1), limit('s', 1), limit('system:', 1)];
    assert.equal(limitLane(limits, 'email.send'), 'email');
    assert.equal(limitLane(limits, 'export'), 'e');
    assert.equal(limitLane(limits, 'sync'), 's');
    assert.equal(limitLane(limits, 'system:prune'), 'system:');
    assert.equal(limitLane([limit('s', 1)], 'system:prune'), null);
    assert.equal(limitLane(limits, 'report'), null);
  });

  it('refills a bucket continuously up to the burst, and spends whole tokens only', () => {
    const rate = { count: 4, periodMs: 1_000 };
    const full = refillBucket(null, rate, 10);
    assert.deepEqual(full, { tokens: 4, refilledAt: 10 });
    const { taken, bucket } = takeTokens(full, 6);
    assert.equal(taken, 4);
    assert.equal(refillBucket(bucket, rate, 10 + SECOND / 8).tokens, 0.5);
    assert.equal(takeTokens(refillBucket(bucket, rate, 10 + SECOND / 8), 1).taken, 0);
    assert.equal(nextTokenAt(bucket, rate, 10), 10 + SECOND / 4);
    assert.equal(nextTokenAt(bucket, rate, 10 + SECOND / 8), 10 + SECOND / 4);
    assert.equal(nextTokenAt(bucket, rate, 10 + SECOND / 4), null, 'a whole token is there');
    assert.equal(refillBucket(bucket, rate, 10 + 60 * SECOND).tokens, 4, 'never more than the burst');
    // A clock that went back refills nothing; a lowered burst caps what is there.
    assert.deepEqual(refillBucket(full, rate, 5), full);
    assert.equal(refillBucket(full, { count: 2, periodMs: 1_000 }, 10).tokens, 2);
  });

  it('takes a lane’s jobs while it has room, the rest in their order', () => {
    const limits = [limit('a', 3, { count: 2, periodMs: 1_000 }), limit('b', 1)];
    const leased = new Map([['b', 1]]);
    const budget = new LaneBudget(
      limits,
      (lane) => leased.get(lane) ?? 0,
      () => null,
      0,
    );
    const jobs = ['a', 'b', 'a', 'c', 'a', 'c'].map((kind, i) => ({ kind, i }));
    assert.deepEqual(
      pickWithinLimits(jobs, 10, budget).map((j) => j.i),
      [0, 2, 3, 5],
    );
    assert.deepEqual(budget.taken, new Map([['a', 2]]));
    assert.deepEqual(
      budget.spent(() => null, 0),
      new Map([['a', { tokens: 0, refilledAt: 0 }]]),
    );
  });

  it('passes over a tenant in the fair order when its lanes are full, without serving it', () => {
    const ready = [
      { scope: 't1', system: false, kind: 'a' },
      { scope: 't1', system: false, kind: 'a' },
      { scope: 't2', system: false, kind: 'b' },
      { scope: 't2', system: false, kind: 'b' },
    ];
    const budget = new LaneBudget(
      [limit('a', 1)],
      () => 0,
      () => null,
      0,
    );
    const picked = fairPick(ready, 10, null, (job) => budget.take(job.kind));
    assert.deepEqual(
      picked.chosen.map((j) => `${j.scope}${j.kind}`),
      ['t1a', 't2b', 't2b'],
    );
    assert.equal(picked.cursor, 't2');
  });

  it('wakes a waiter whose filter overlaps a lane', () => {
    assert.equal(laneMayServe('email', null), true);
    assert.equal(laneMayServe('system:', null), false);
    assert.equal(laneMayServe('email', ['email.send']), true);
    assert.equal(laneMayServe('email.send', ['email']), true);
    assert.equal(laneMayServe('email', ['report']), false);
    assert.equal(laneMayServe('system:prune', ['sys']), false);
    assert.equal(laneMayServe('system:', ['system:prune']), true);
  });

  it('reads the limits of [jobs.kinds] tables that set one, by config', () => {
    const limits = configKindLimits({ b: { rate: '5/1m' }, a: { concurrency: 2 }, c: {} }, 7);
    assert.deepEqual(limits, [
      { kindPrefix: 'a', concurrency: 2, rate: null, setAt: 7, by: 'config' },
      { kindPrefix: 'b', concurrency: null, rate: { count: 5, periodMs: 60_000 }, setAt: 7, by: 'config' },
    ]);
  });
});
