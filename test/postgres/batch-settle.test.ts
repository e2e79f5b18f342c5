/**
 * A batch of results on PostgreSQL is one compare-and-set UPDATE, worked out
 * from the leases the store wrote (or from one SELECT for jobs it did not
 * lease). When another server writes one of the rows in between, that row's
 * compare fails and its item is redone against the row as it is now: the
 * other write is kept, never overwritten with a change computed from the old row.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ManualClock } from '../../src/core/clock.ts';
import * as transitions from '../../src/core/transitions.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { encodeRecord } from '../../src/codec/value.ts';
import { Queue } from '../../src/engine/queue.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { pgSchema } from '../../src/storage/postgres/connection.ts';
import { fenceOf, testConfig } from '../../src/testing/conformance/harness.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { eventually } from '../support/server.ts';

const acme = tenantScope('acme');

describe('PostgreSQL batch completion', () => {
  const schema = uniqueSchema('batch');
  const clock = new ManualClock();
  const config = testConfig();
  let queue: Queue;
  let other: pg.Client;

  before(async () => {
    const store = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 4 });
    queue = new Queue({ store, config, clock, services: false });
    other = new pg.Client({ connectionString: TEST_PG_URL });
    await other.connect();
  });

  after(async () => {
    await other.end();
    await queue.close();
    await dropTestSchema(schema);
  });

  it('redoes an item whose row another server wrote after this store leased it, on top of that write', async () => {
    await queue.enqueueBatch([{ kind: 'a' }, { kind: 'b' }], acme);
    const [first, second] = await queue.lease({ workerId: 'w', scope: acme, limit: 2 });
    assert.ok(first && second);
    // Another server heartbeats `first` in a transaction that stays open, holding the row.
    const policy = { config: config.jobs };
    const extended = transitions.heartbeat(first, fenceOf(first), clock.now() + 1, policy);
    await other.query('BEGIN');
    await other.query(`UPDATE ${pgSchema(schema).table}.jobs SET record = $2, lease_deadline = $3 WHERE job_id = $1`, [
      first.jobId,
      encodeRecord(extended),
      extended.leaseDeadline,
    ]);
    const batch = queue.completeEach([
      { jobId: first.jobId, fence: fenceOf(first) },
      { jobId: second.jobId, fence: fenceOf(second) },
    ]);
    // The batch starts from the leases as this store wrote them, from before the heartbeat; its
    // UPDATE now waits for the heartbeat's transaction.
    // Only PostgreSQL knows when it does: poll its lock table.
    await eventually(async () => {
      const { rows } = await other.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'`,
      );
      return (rows[0]?.n ?? 0) > 0;
    }, 'the batch UPDATE to wait for the row lock');
    await other.query('COMMIT');
    const results = await batch;
    assert.ok(results.every((r) => r.ok));
    const stored = await queue.show(first.jobId);
    assert.equal(stored.state, JobState.Completed);
    assert.deepEqual(
      stored.events.map((e) => e.transition),
      ['enqueued', 'leased', 'extended', 'completed'],
    );
    assert.equal((await queue.show(second.jobId)).state, JobState.Completed);
  });
});
