/**
 * A job's audit trail stays bounded (MAX_EVENTS) and keeps what its readers
 * need: the first event, a count of what was folded, and the current
 * lease's `leased` event however long the lease ran.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_EVENTS } from '../src/core/bounds.ts';
import { appendEvent } from '../src/core/transitions.ts';
import type { JobEvent } from '../src/core/types.ts';

const at = (n: number): number => 1_700_000_000_000_000 + n * 10_000_000;
const ev = (n: number, transition: string, detail: string | null = null): JobEvent => ({
  at: at(n),
  transition,
  detail,
});

/** The trail after appending `events` one by one, as the transitions do. */
const trail = (events: readonly JobEvent[]): JobEvent[] =>
  events.reduce<JobEvent[]>((kept, next) => appendEvent(kept, next), []);

const dropped = (events: readonly JobEvent[]): number =>
  Number(/dropped=(\d+)/.exec(events.find((e) => e.transition === 'stats')?.detail ?? '')?.[1] ?? '0');

describe('the audit trail of a long lease', () => {
  const appended = [
    ev(0, 'enqueued'),
    ev(1, 'leased', 'worker=w-1 generation=1'),
    // Ten minutes of a handler that heartbeats and reports progress in turn: no two alike in a row.
    ...Array.from({ length: 120 }, (_, i) => ev(2 + i, i % 2 === 0 ? 'extended' : 'progress')),
  ];
  const kept = trail(appended);

  it('keeps the current lease’s leased event when heartbeats and progress reports fill the trail', () => {
    assert.equal(kept.length, MAX_EVENTS);
    assert.deepEqual(kept[0], appended[0]);
    assert.equal(kept[1]?.transition, 'stats');
    assert.deepEqual(kept[2], appended[1], 'the leased event, as written');
    assert.deepEqual(kept.slice(3), appended.slice(-(MAX_EVENTS - 3)), 'then the newest, in order');
  });

  it('counts every event it folded away, once', () => {
    assert.equal(dropped(kept) + (kept.length - 1), appended.length);
  });

  it('keeps only the latest leased event once a new lease begins', () => {
    const relet = trail([
      ...appended,
      ev(200, 'reaped'),
      ev(201, 'leased', 'worker=w-2 generation=2'),
      ...Array.from({ length: 70 }, (_, i) => ev(202 + i, i % 2 === 0 ? 'extended' : 'progress')),
    ]);
    const leased = relet.filter((e) => e.transition === 'leased');
    assert.deepEqual(leased, [ev(201, 'leased', 'worker=w-2 generation=2')]);
    assert.equal(relet.length, MAX_EVENTS);
    assert.equal(dropped(relet) + (relet.length - 1), appended.length + 72);
  });
});
