/**
 * The leases a PostgreSQL store remembers (`WrittenLeases`): only Leased jobs, their bytes in a
 * buffer of their own, within a byte budget, the ones written longest ago dropped first, a job
 * written again counted once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeConfig } from '../../src/core/config.ts';
import * as transitions from '../../src/core/transitions.ts';
import type { JobRecord } from '../../src/core/types.ts';
import { WrittenLeases } from '../../src/storage/postgres/written-leases.ts';

const NOW = Date.UTC(2026, 0, 1) * 1000;
const policy: transitions.RetryPolicy = { config: makeConfig({}).jobs };

function job(n: number): JobRecord {
  return transitions.enqueue(
    {
      jobId: `01a22b9c-0b3f-75cf-b38e-${n.toString(16).padStart(12, '0')}`,
      tenant: 'acme',
      kind: 'k',
      payload: Buffer.alloc(0),
      priority: 128,
      createdAt: NOW + n,
      notBefore: null,
      idempotencyKey: null,
      maxAttempts: null,
      timeoutSecs: null,
    },
    NOW,
  );
}

const leased = (n: number): JobRecord => transitions.lease(job(n), 'w', NOW, policy);
/** Each entry counts its bytes and 384 more; 16 of 50 bytes fill 16 x 434. */
const ENTRY = 50 + 384;
const bytes = (fill: number): Buffer => Buffer.alloc(50, fill);

describe('the leases a PostgreSQL store remembers', () => {
  it('keeps a Leased job, and drops it when the job is written in another state', () => {
    const leases = new WrittenLeases(16 * ENTRY);
    const lease = leased(1);
    leases.remember(lease, bytes(1));
    assert.deepEqual(leases.get(lease.jobId), bytes(1));
    const done = transitions.complete(lease, { workerId: 'w', leaseGeneration: lease.leaseGeneration }, NOW, null);
    leases.remember(done, bytes(2));
    assert.equal(leases.get(lease.jobId), undefined);
    leases.remember(job(2), bytes(3));
    assert.equal(leases.size, 0, 'a Pending job is not kept');
  });

  it('keeps a copy of its own, not a view of the buffer it was given', () => {
    const leases = new WrittenLeases(16 * ENTRY);
    const lease = leased(1);
    // A slice of a larger buffer, as Node's pool hands out small buffers.
    const shared = Buffer.alloc(8_192, 7);
    leases.remember(lease, shared.subarray(100, 150));
    shared.fill(0);
    const kept = leases.get(lease.jobId);
    assert.ok(kept);
    assert.deepEqual(kept, Buffer.alloc(50, 7));
    assert.notEqual(kept.buffer, shared.buffer);
  });

  it('drops the leases written longest ago to stay within its bytes, counting a job written again once', () => {
    const leases = new WrittenLeases(16 * ENTRY);
    const jobs = Array.from({ length: 17 }, (_, i) => leased(i + 1));
    for (const record of jobs.slice(0, 16)) leases.remember(record, bytes(1));
    const [first, second] = jobs as [JobRecord, JobRecord];
    leases.remember(first, bytes(1));
    assert.equal(leases.size, 16);
    leases.remember(jobs[16] as JobRecord, bytes(1));
    assert.equal(leases.size, 16);
    assert.equal(leases.get(second.jobId), undefined, 'the second, written before the first was written again, went');
    assert.ok(leases.get(first.jobId));
    assert.ok(leases.get((jobs[16] as JobRecord).jobId));
    leases.forget(first.jobId);
    leases.remember(second, bytes(1));
    assert.equal(leases.size, 16, 'forgetting gave its bytes back');
  });

  it('does not keep a record larger than a sixteenth of its bytes', () => {
    const leases = new WrittenLeases(16 * ENTRY);
    leases.remember(leased(1), Buffer.alloc(51));
    leases.remember(leased(2), Buffer.alloc(50));
    assert.equal(leases.size, 1);
    assert.ok(leases.get(leased(2).jobId));
  });
});
