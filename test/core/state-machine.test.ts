import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { makeConfig } from '../../src/core/config.ts';
import * as transitions from '../../src/core/transitions.ts';
import { LeaseConflictError } from '../../src/core/errors.ts';
import { JobState, type JobRecord } from '../../src/core/types.ts';

const { TRANSITIONS, isEdge } = transitions;
const doc = readFileSync(new URL('../../docs/state-machine.md', import.meta.url), 'utf8');
const diagram = /```mermaid\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';

describe('the state machine document', () => {
  for (const edge of TRANSITIONS) {
    it(`draws ${edge.name}: ${edge.from} to ${edge.to}`, () => {
      const from = edge.from === 'start' ? '[*]' : edge.from;
      assert.ok(
        diagram.includes(`${from} --> ${edge.to}: ${edge.name}`),
        `missing "${from} --> ${edge.to}: ${edge.name}"`,
      );
    });
  }

  it('draws no edge the table lacks', () => {
    const drawn = diagram.split('\n').filter((line) => line.includes('-->') && line.includes(':'));
    assert.equal(drawn.length, TRANSITIONS.length);
  });
});

describe('the transition table', () => {
  const policy: transitions.RetryPolicy = {
    config: makeConfig({ jobs: { max_attempts: 2 } }).jobs,
  };
  const NOW = Date.UTC(2026, 0, 1) * 1000;
  /** The one job these cases start from, as a producer's enqueue would make it. */
  const NEW_JOB: transitions.NewJobFields = {
    jobId: '01a22b9c-0b3f-75cf-b38e-00434c789a13',
    tenant: 'acme',
    kind: 'k',
    payload: Buffer.alloc(0),
    priority: 128,
    createdAt: NOW,
    notBefore: null,
    idempotencyKey: null,
    maxAttempts: null,
    timeoutSecs: null,
  };
  const STATE_NAMES = Object.fromEntries(Object.entries(JobState).map(([name, value]) => [value, name]));

  /** Every (function, before, after) the functions take, driven through each edge once. */
  function takenEdges(): Set<string> {
    const taken = new Set<string>();
    const take = (name: string, before: JobRecord | null, after: JobRecord): JobRecord => {
      taken.add(`${name} ${before === null ? 'start' : STATE_NAMES[before.state]} ${STATE_NAMES[after.state]}`);
      return after;
    };
    const fresh = (): JobRecord => take('enqueue', null, transitions.enqueue(NEW_JOB, NOW));
    const leased = (record: JobRecord): JobRecord => take('lease', record, transitions.lease(record, 'w', NOW, policy));
    const fence = (record: JobRecord) => ({ workerId: 'w', leaseGeneration: record.leaseGeneration });

    let job = leased(fresh());
    job = take('heartbeat', job, transitions.heartbeat(job, fence(job), NOW, policy));
    // A heartbeat carrying progress is the same edge, whatever event it leaves.
    job = take('heartbeat', job, transitions.heartbeat(job, fence(job), NOW, policy, '{"done":1}'));
    job = take('checkpoint', job, transitions.checkpoint(job, fence(job), Buffer.from('x'), NOW, policy));
    take('complete', job, transitions.complete(job, fence(job), NOW, Buffer.from('"ok"')));

    job = leased(fresh());
    job = take('fail', job, transitions.fail(job, fence(job), { error: 'e', permanent: false }, NOW, policy));
    job = leased({ ...job, notBefore: null });
    const dead = take('fail', job, transitions.fail(job, fence(job), { error: 'e', permanent: false }, NOW, policy));
    take('retry', dead, transitions.retry(dead, NOW));
    take('discard', dead, transitions.discard(dead, { by: 'operator', reason: null }, NOW));
    const gated = transitions.enqueue({ ...NEW_JOB, notBefore: NOW + 1 }, NOW);
    take('runNow', gated, transitions.runNow(gated, { by: 'operator' }, NOW));
    const waiting = transitions.waitForTurn(transitions.enqueue({ ...NEW_JOB, orderKey: 'k' }, NOW));
    take('promote', waiting, transitions.promote(waiting, null, NOW));

    job = leased(fresh());
    take('release', job, transitions.release(job, fence(job), NOW));

    const cancel = { by: 'operator', reason: null };
    take('cancel', fresh(), transitions.cancel(fresh(), cancel, NOW));
    job = leased(fresh());
    const cancelled = take('cancel', job, transitions.cancel(job, cancel, NOW));
    take('retry', cancelled, transitions.retry(cancelled, NOW));

    const expired = NOW + 3_600_000_000;
    job = leased(fresh());
    job = take('reap', job, transitions.reap(job, expired, policy));
    job = leased({ ...job, notBefore: null });
    take('reap', job, transitions.reap(job, expired + 3_600_000_000, policy));
    return taken;
  }

  it('is exactly the set of edges the transition functions take', () => {
    const table = new Set(TRANSITIONS.map((t) => `${t.name} ${t.from} ${t.to}`));
    assert.deepEqual([...takenEdges()].sort(), [...table].sort());
  });

  it('knows which moves are edges and which are not', () => {
    assert.ok(isEdge('complete', JobState.Leased, JobState.Completed));
    assert.ok(!isEdge('complete', JobState.Pending, JobState.Completed));
    assert.ok(!isEdge('retry', JobState.Completed, JobState.Pending));
    assert.ok(!isEdge('lease', 'start', JobState.Leased));
    assert.ok(isEdge('cancel', JobState.Leased, JobState.Cancelled));
    assert.ok(!isEdge('cancel', JobState.Completed, JobState.Cancelled));
  });

  it("refuses a cancelled job's holder with reason cancelled and keeps its generation", () => {
    const job = transitions.lease(transitions.enqueue(NEW_JOB, NOW), 'w', NOW, policy);
    const cancelled = transitions.cancel(job, { by: 'tenant:acme', reason: 'not needed' }, NOW);
    assert.equal(cancelled.state, JobState.Cancelled);
    assert.equal(cancelled.leaseGeneration, job.leaseGeneration);
    assert.equal(cancelled.workerId, null);
    assert.equal(cancelled.events.at(-1)?.detail, 'worker=w generation=1 by=tenant:acme reason=not needed');
    assert.throws(
      () => transitions.heartbeat(cancelled, { workerId: 'w', leaseGeneration: 1 }, NOW, policy),
      (error: unknown) => error instanceof LeaseConflictError && error.reason === 'cancelled',
    );
    assert.throws(
      () => transitions.cancel(cancelled, { by: null, reason: null }, NOW),
      /cannot cancel a cancelled job/,
    );
  });
});

describe('the lease kind filter', () => {
  const { leaseKindMatches, kindMatches } = transitions;

  it('takes a system kind only for a prefix that starts with system: itself', () => {
    const cases: [readonly string[] | null, boolean][] = [
      [null, false],
      [[''], false],
      [['sys'], false],
      [['system'], false],
      [['email', 'sys'], false],
      [['system:'], true],
      [['system:pr'], true],
      [['system:prune'], true],
      [['system:other'], false],
      [['email', 'system:'], true],
    ];
    for (const [kinds, expected] of cases) {
      assert.equal(leaseKindMatches('system:prune', kinds), expected, JSON.stringify(kinds));
    }
  });

  it('matches every other kind as a list filter does', () => {
    for (const kinds of [null, [''], ['em'], ['email'], ['sys'], ['system:'], ['x', 'e']]) {
      assert.equal(leaseKindMatches('email', kinds), kindMatches('email', kinds), JSON.stringify(kinds));
    }
    // A list filter still finds system jobs by any prefix (an operator's `--kind-prefix sys`).
    assert.ok(kindMatches('system:prune', ['sys']));
  });
});
