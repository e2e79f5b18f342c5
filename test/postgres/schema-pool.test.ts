/**
 * The pool of migrated schemas the PostgreSQL conformance harness draws from
 * (test/support/pg-schemas.ts): a schema given back after a case holds exactly what a fresh
 * migration leaves, so the next case starts on an empty store as if it had migrated its own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { tenantScope } from '../../src/core/types.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { postgresHarness, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { giveBack, takeSchema } from '../support/pg-schemas.ts';

const acme = tenantScope('acme');

/** Every table's rows and every sequence's next value in `schema`, with what differs between stores left out. */
async function contents(admin: pg.Client, schema: string): Promise<Record<string, unknown>> {
  const s = pg.escapeIdentifier(schema);
  const tables = await admin.query<{ tablename: string }>(
    'SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename',
    [schema],
  );
  const seen: Record<string, unknown> = {};
  for (const { tablename } of tables.rows) {
    const { rows } = await admin.query(`SELECT * FROM ${s}.${pg.escapeIdentifier(tablename)} ORDER BY 1`);
    // A migration's time and the random store id differ between two schemas migrated apart.
    seen[tablename] = rows.map(({ applied_at: _at, store_id: _id, ...row }: Record<string, unknown>) => row);
  }
  const sequences = await admin.query<{ sequencename: string }>(
    'SELECT sequencename FROM pg_sequences WHERE schemaname = $1 ORDER BY sequencename',
    [schema],
  );
  for (const { sequencename } of sequences.rows) {
    const { rows } = await admin.query<{ next: string }>(
      `SELECT nextval(${pg.escapeLiteral(`${s}.${pg.escapeIdentifier(sequencename)}`)}) AS next`,
    );
    seen[`${sequencename} next`] = rows[0]?.next;
  }
  return seen;
}

describe('the pool of migrated schemas', () => {
  const admin = new pg.Client({ connectionString: TEST_PG_URL });
  before(() => admin.connect());
  after(() => admin.end());

  it('gives a schema back holding what a fresh migration leaves, whatever a case wrote in it', async () => {
    const harness = await postgresHarness();
    assert.ok(harness.store instanceof PostgresJobStore);
    const schema = harness.store.schemaName;
    // Something in every table a case can write: jobs through their transitions (the log), a
    // schedule, a pause, a kind limit, and the time of the last enqueue.
    const { job } = await harness.queue.enqueue({ kind: 'email', payload: '{}' }, acme);
    const leased = await harness.queue.leaseNext({ workerId: 'w1', scope: acme });
    assert.equal(leased?.jobId, job.jobId);
    await harness.queue.complete(job.jobId, { workerId: 'w1', leaseGeneration: leased.leaseGeneration });
    await harness.queue.createSchedule({ name: 'hourly', everySecs: 3_600, job: { kind: 'report' } }, acme);
    await harness.queue.pause({ kindPrefix: 'email:', scope: acme });
    await harness.queue.setKindLimit({ kindPrefix: 'email', concurrency: 2 });
    await harness.close();

    // The next harness of this process gets the same schema, emptied.
    const again = await takeSchema();
    assert.equal(again, schema);
    const fresh = uniqueSchema('pool_fresh');
    await (await PostgresJobStore.open({ url: TEST_PG_URL, schema: fresh, poolSize: 1 })).close();
    try {
      assert.deepEqual(await contents(admin, again), await contents(admin, fresh));
    } finally {
      await giveBack(again);
      await admin.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(fresh)} CASCADE`);
    }
  });

  it('drops a schema whose tables a case changed instead of pooling it', async () => {
    const schema = await takeSchema();
    await admin.query(`CREATE TABLE ${pg.escapeIdentifier(schema)}.extra (id int)`);
    await giveBack(schema);
    const { rows } = await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    assert.equal(rows.length, 0);
    const next = await takeSchema();
    await giveBack(next);
    assert.notEqual(next, schema);
  });
});
