/**
 * A worker of a real `telha serve` on PostgreSQL whose handler completes its jobs in its own
 * transaction (`completeInTransaction`, then `ctx.completedInTransaction()`): the application's
 * rows and the completions commit together, the worker sends no completion of its own, and a
 * producer waiting for the results gets them.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import pg from 'pg';
import { TelhaClient } from '../../src/client/client.ts';
import { Worker } from '../../src/client/worker.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { completeInTransaction, failInTransaction } from '../../src/storage/postgres/transactional.ts';
import { dropTestSchema, tempDir, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { freePort, spawnServer } from '../support/server.ts';

const acme = tenantScope('acme');

describe('a worker that completes its jobs in its own transaction, through telha serve on PostgreSQL', () => {
  it('commits each order row with its job’s completion, and sends nothing more', { timeout: 120_000 }, async () => {
    const schema = uniqueSchema('txworker');
    const unused = tempDir('telha-txworker-');
    const server = await spawnServer(unused, await freePort(), {
      TELHA_STORAGE__KIND: 'postgres',
      TELHA_STORAGE__URL: TEST_PG_URL,
      TELHA_STORAGE__SCHEMA: schema,
      TELHA_RETENTION__ENABLED: 'false',
    });
    const client = new TelhaClient({ address: server.address });
    const pool = new pg.Pool({ connectionString: TEST_PG_URL, max: 4 });
    let worker: Worker | null = null;
    try {
      await pool.query(`CREATE TABLE "${schema}".orders (id text PRIMARY KEY, job_id uuid NOT NULL)`);
      const leaseLost: string[] = [];
      worker = new Worker({
        address: server.address,
        kinds: ['ship'],
        concurrency: 4,
        logger: silentLogger,
        onLeaseLost: (jobId) => leaseLost.push(jobId),
        handler: async (ctx) => {
          const order = Buffer.from(ctx.payload).toString();
          const refused = order === 'order-refused';
          const failure = { error: 'refused', permanent: true };
          const tx = await pool.connect();
          try {
            await tx.query('BEGIN');
            await tx.query(`INSERT INTO "${schema}".orders VALUES ($1, $2)`, [order, ctx.jobId]);
            if (refused) {
              // The application decides this one failed for good, in the same transaction as its row.
              await failInTransaction(tx, ctx.jobId, ctx.fence, failure, undefined, { schema });
            } else {
              await completeInTransaction(
                tx,
                ctx.jobId,
                ctx.fence,
                { result: Buffer.from(JSON.stringify({ shipped: order })), successors: [{ kind: 'email' }] },
                undefined,
                { schema },
              );
            }
            await tx.query('COMMIT');
          } finally {
            tx.release();
          }
          if (refused) ctx.failedInTransaction(failure);
          else ctx.completedInTransaction();
          return 'never stored';
        },
      }).start();
      const failures: [string, boolean][] = [];
      worker.on('failed', (_job, error, { permanent }) => failures.push([error.message, permanent]));
      const orders = ['order-1', 'order-2', 'order-3', 'order-refused'];
      const jobs = await client.enqueueBatch(
        orders.map((order) => ({ kind: 'ship', payload: order })),
        acme,
      );
      const results = await Promise.allSettled(jobs.map(({ job }) => client.result(job.jobId)));
      await worker.close();

      for (const [i, outcome] of results.entries()) {
        const order = orders[i] as string;
        if (order === 'order-refused') {
          assert.equal(outcome.status, 'rejected', order);
          continue;
        }
        assert.equal(outcome.status, 'fulfilled', order);
        assert.deepEqual(outcome.value.json(), { shipped: order });
      }
      for (const { job } of jobs) {
        const stored = await client.show(job.jobId);
        const transitions = stored.events.map((e) => e.transition);
        assert.equal(
          transitions.filter((t) => t === 'completed' || t === 'failed').length,
          1,
          `one outcome for ${job.jobId}`,
        );
        assert.ok(!transitions.includes('reaped'));
      }
      assert.equal((await client.show(jobs[3]!.job.jobId)).state, JobState.Dead);
      const { rows } = await pool.query<{ id: string }>(`SELECT id FROM "${schema}".orders ORDER BY id`);
      assert.deepEqual(
        rows.map((r) => r.id),
        [...orders].sort(),
      );
      const emails = (await client.counts(acme)).filter((r) => r.kind === 'email');
      assert.deepEqual(emails, [{ state: JobState.Pending, kind: 'email', count: 3 }]);
      assert.deepEqual(leaseLost, []);
      assert.deepEqual(failures, [['refused', true]]);
      assert.deepEqual(worker.stats, { completed: 3, failed: 1, released: 0, leaseLost: 0 });
    } finally {
      await worker?.close();
      client.close();
      await pool.end();
      server.child.kill('SIGTERM');
      await server.exited;
      await dropTestSchema(schema);
      rmSync(unused, { recursive: true, force: true });
    }
  });
});
