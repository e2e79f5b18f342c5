import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { ManualClock } from '../../src/core/clock.ts';
import { makeConfig } from '../../src/core/config.ts';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { openQueue } from '../../src/open.ts';
import { enqueueInTransaction } from '../../src/storage/postgres/transactional.ts';
import { TEST_PG_URL, uniqueSchema } from '../support/backends.ts';

const acme = tenantScope('acme');

describe('transactional enqueue', () => {
  it("creates jobs only if the application's transaction commits", async () => {
    const schema = uniqueSchema('tx');
    const clock = new ManualClock();
    const queue = await openQueue({
      config: makeConfig({ storage: { kind: 'postgres', url: TEST_PG_URL, schema }, retention: { enabled: false } }),
      clock,
      services: false,
    });
    const app = new pg.Client({ connectionString: TEST_PG_URL });
    await app.connect();
    try {
      await app.query('BEGIN');
      const [rolledBack] = await enqueueInTransaction(app, [{ kind: 'email', idempotencyKey: 'order-1' }], acme, {
        schema,
        clock,
      });
      await app.query('ROLLBACK');
      assert.ok(rolledBack);
      await assert.rejects(
        queue.show(rolledBack.job.jobId),
        (e: unknown) => e instanceof TelhaError && e.code === ErrorCode.NotFound,
      );

      await app.query('BEGIN');
      const [committed] = await enqueueInTransaction(app, [{ kind: 'email', idempotencyKey: 'order-1' }], acme, {
        schema,
        clock,
      });
      // Invisible to the queue until the application commits.
      assert.equal(await queue.leaseNext({ workerId: 'w1', scope: acme }), null);
      await app.query('COMMIT');
      assert.ok(committed?.created);
      assert.equal((await queue.show(committed.job.jobId)).state, JobState.Pending);
      const leased = await queue.leaseNext({ workerId: 'w1', scope: acme });
      assert.equal(leased?.jobId, committed.job.jobId);

      // Same validation as the queue: bad input throws before anything is written.
      await app.query('BEGIN');
      await assert.rejects(
        enqueueInTransaction(app, [{ kind: '' }], acme, { schema }),
        (e: unknown) => e instanceof TelhaError && e.field === 'kind',
      );
      await app.query('ROLLBACK');
    } finally {
      await app.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await app.end();
      await queue.close();
    }
  });
});
