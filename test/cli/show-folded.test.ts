/**
 * `telha jobs show` on a job whose trail was folded: the `stats` event is
 * stamped when it folded, later than the events after it, and must read as
 * a note in its place, not as a moment out of order with a negative gap.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatShow } from '../../src/cli/format.ts';
import { appendEvent } from '../../src/core/transitions.ts';
import { JobState, type JobEvent, type JobRecord } from '../../src/core/types.ts';

const T0 = 1_700_000_000_000_000;

describe('jobs show on a folded trail', () => {
  const events = [
    { at: T0, transition: 'enqueued', detail: null },
    { at: T0 + 1_000_000, transition: 'leased', detail: 'worker=w-1 generation=1' },
    ...Array.from({ length: 80 }, (_, i) => ({
      at: T0 + (2 + i) * 5_000_000,
      transition: i % 2 === 0 ? 'extended' : 'progress',
      detail: null,
    })),
  ].reduce<JobEvent[]>((kept, next) => appendEvent(kept, next), []);
  const job = {
    jobId: '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
    tenant: 'acme',
    kind: 'long.report',
    payload: new Uint8Array(),
    priority: 100,
    createdAt: T0,
    state: JobState.Leased,
    attempts: 0,
    leaseGeneration: 1,
    workerId: 'w-1',
    leaseDeadline: T0 + 500_000_000,
    notBefore: null,
    idempotencyKey: null,
    maxAttempts: null,
    continuation: null,
    events,
    attemptDeadline: null,
    timeoutSecs: null,
    result: null,
    progress: null,
    traceContext: null,
    supersedeKey: null,
    supersededBy: null,
    debounceUntil: null,
    effectiveMaxAttempts: 5,
  } satisfies JobRecord & { effectiveMaxAttempts: number };
  const lines = formatShow(job, T0 + 400_000_000).split('\n');
  const lifecycle = lines.slice(lines.indexOf('lifecycle') + 1, -1);

  it('prints no negative gap', () => {
    assert.ok(lifecycle.length > 60);
    for (const line of lifecycle) assert.doesNotMatch(line, /\+-/, line);
  });

  it('prints the fold as a note without a time, where it stands', () => {
    const stats = lifecycle.find((line) => line.includes('stats'));
    assert.match(stats ?? '', /^\s+\(folded\)\s+stats\s+dropped=\d+ older events$/);
    assert.doesNotMatch(stats ?? '', /\d{4}-\d{2}-\d{2}/);
  });
});
