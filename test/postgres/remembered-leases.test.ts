/**
 * A PostgreSQL store remembers the leases it wrote and works a worker's result out from them
 * without reading the row. The row stays the truth: here another server moves the jobs on
 * (reaps and leases them again to the same worker id, or cancels one) behind the first server's
 * back, and every result sent to the first server is judged against the rows, one at a time
 * and in batches: the stale holder is refused, the current one accepted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../../src/core/clock.ts';
import { LeaseConflictError } from '../../src/core/errors.ts';
import { JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { fenceOf, testConfig } from '../../src/testing/conformance/harness.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';

const acme = tenantScope('acme');

describe('results sent to a server whose remembered leases are out of date (PostgreSQL)', () => {
  const schema = uniqueSchema('leases');
  const clock = new ManualClock();
  const config = testConfig({ jobs: { lease_ttl_secs: 10, backoff_base_secs: 0 } });
  let first: Queue;
  let second: Queue;

  before(async () => {
    const open = (): Promise<PostgresJobStore> =>
      PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 2, pollIntervalMs: 60_000 });
    first = new Queue({ store: await open(), config, clock, services: false });
    second = new Queue({ store: await open(), config, clock, services: false });
  });

  after(async () => {
    await Promise.all([first.close(), second.close()]);
    await dropTestSchema(schema);
  });

  /** `n` jobs leased by worker `w` on the first server, then reaped and leased again to `w` on the second. */
  async function leasedAgainElsewhere(n: number): Promise<{ stale: JobRecord[]; current: JobRecord[] }> {
    await first.enqueueBatch(
      Array.from({ length: n }, () => ({ kind: 'k' })),
      acme,
    );
    const stale = await first.lease({ workerId: 'w', scope: acme, limit: n });
    assert.equal(stale.length, n);
    clock.advanceSeconds(11);
    assert.equal((await second.maintenance.reapExpired()).reaped, n);
    const current = await second.lease({ workerId: 'w', scope: acme, limit: n });
    assert.deepEqual(current.map((job) => job.jobId).sort(), stale.map((job) => job.jobId).sort());
    const byId = new Map(current.map((job) => [job.jobId, job]));
    return { stale, current: stale.map((job) => byId.get(job.jobId) as JobRecord) };
  }

  function assertSuperseded(error: unknown): true {
    assert.ok(error instanceof LeaseConflictError, String(error));
    assert.equal(error.reason, 'generation_superseded');
    return true;
  }

  it('refuses the superseded generation and accepts the current one, one result at a time', async () => {
    const { stale, current } = await leasedAgainElsewhere(1);
    const [old, now] = [stale[0] as JobRecord, current[0] as JobRecord];
    // The current holder first: the first server still remembers the old lease.
    await first.heartbeat(now.jobId, fenceOf(now));
    await assert.rejects(first.heartbeat(old.jobId, fenceOf(old)), assertSuperseded);
    await assert.rejects(first.complete(old.jobId, fenceOf(old)), assertSuperseded);
    const done = await first.complete(now.jobId, fenceOf(now));
    assert.equal(done.job.state, JobState.Completed);
    assert.deepEqual(
      (await second.show(now.jobId)).events.map((e) => e.transition),
      ['enqueued', 'leased', 'reaped', 'leased', 'extended', 'completed'],
    );
  });

  it('refuses the superseded generation and accepts the current one in a batch', async () => {
    const { stale, current } = await leasedAgainElsewhere(3);
    // The current holder first: the first server still remembers the old leases.
    const currentPass = await first.completeEach(current.map((job) => ({ jobId: job.jobId, fence: fenceOf(job) })));
    assert.deepEqual(
      currentPass.map((outcome) => outcome.ok),
      [true, true, true],
    );
    const stalePass = await first.completeEach(stale.map((job) => ({ jobId: job.jobId, fence: fenceOf(job) })));
    for (const outcome of stalePass) {
      assert.equal(outcome.ok, false);
      if (!outcome.ok) assert.ok(outcome.error instanceof LeaseConflictError, String(outcome.error));
    }
    for (const job of current) {
      const stored = await second.show(job.jobId);
      assert.equal(stored.state, JobState.Completed);
      assert.equal(stored.leaseGeneration, job.leaseGeneration);
    }
  });

  it('refuses the holder of a lease another server cancelled', async () => {
    await first.enqueue({ kind: 'k' }, acme);
    const [job] = await first.lease({ workerId: 'w', scope: acme, limit: 1 });
    assert.ok(job);
    await second.cancel(job.jobId);
    const [outcome] = await first.completeEach([{ jobId: job.jobId, fence: fenceOf(job) }]);
    assert.ok(outcome && !outcome.ok);
    assert.ok(outcome.error instanceof LeaseConflictError);
    assert.equal(outcome.error.reason, 'cancelled');
    await assert.rejects(first.complete(job.jobId, fenceOf(job)), (error: unknown) => {
      assert.ok(error instanceof LeaseConflictError);
      assert.equal(error.reason, 'cancelled');
      return true;
    });
    assert.equal((await second.show(job.jobId)).state, JobState.Cancelled);
  });
});
