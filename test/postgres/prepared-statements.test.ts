/**
 * The hot statements as named prepared statements (`storage.prepared_statements`): the claims
 * (key order and fair), the claim's gate opening, the writes and the reads by id are prepared
 * once on each connection and run again by name; with the option off, no statement is prepared,
 * for a pooler that cannot keep them. Either way the queue does the same work.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type pg from 'pg';
import { ManualClock } from '../../src/core/clock.ts';
import { ANY_SCOPE, JobState, tenantScope } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { fenceOf, testConfig } from '../../src/testing/conformance/harness.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';

const acme = tenantScope('acme');

/**
 * Enqueue three jobs (one delayed), lease them in key order and fairly, complete them, and try to
 * complete a fourth that was never leased (the one result whose row is read first: the store
 * remembers the leases it wrote); return the statements prepared on the store's one connection.
 */
async function preparedAfterWork(preparedStatements: boolean): Promise<{ name: string; statement: string }[]> {
  const schema = uniqueSchema('prepared');
  const store = await PostgresJobStore.open({
    url: TEST_PG_URL,
    schema,
    poolSize: 1,
    pollIntervalMs: 60_000,
    preparedStatements,
  });
  const clock = new ManualClock();
  const queue = new Queue({ store, config: testConfig(), clock, services: false });
  try {
    for (const tag of ['a', 'b']) await queue.enqueue({ kind: 'k', payload: Buffer.from(tag) }, acme);
    // Its gate opens at the last claim, which EXECUTEs the gate opening the first one prepared.
    await queue.enqueue({ kind: 'k', payload: Buffer.from('c'), delayMs: 60_000 }, acme);
    // The key-order claim twice (prepared on the first run, run by name on the second), then the
    // fair one (`jobs.fair_tenants`, on by default, over every scope).
    const leased = [
      ...(await queue.lease({ workerId: 'w', scope: acme, limit: 1 })),
      ...(await queue.lease({ workerId: 'w', scope: acme, limit: 1 })),
    ];
    assert.deepEqual(await queue.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 1 }), [], 'the gate is closed');
    clock.advanceSeconds(60);
    leased.push(...(await queue.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 1 })));
    assert.deepEqual(
      leased.map((job) => Buffer.from(job.payload).toString()),
      ['a', 'b', 'c'],
    );
    const { job: waiting } = await queue.enqueue({ kind: 'k', payload: Buffer.from('d') }, acme);
    const outcomes = await queue.completeEach([
      ...leased.map((job) => ({ jobId: job.jobId, fence: fenceOf(job) })),
      { jobId: waiting.jobId, fence: { workerId: 'w', leaseGeneration: 1 } },
    ]);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.ok),
      [true, true, true, false],
    );
    const counts = await queue.counts(acme);
    assert.deepEqual(
      counts.filter((row) => row.count > 0).map((row) => [row.state, row.count]),
      [
        [JobState.Pending, 1],
        [JobState.Completed, 3],
      ],
    );
    // The pool's one connection is the one every statement above ran on.
    const pool = (store as unknown as { pool: pg.Pool }).pool;
    const { rows } = await pool.query<{ name: string; statement: string }>(
      'SELECT name, statement FROM pg_prepared_statements ORDER BY name',
    );
    return rows;
  } finally {
    await queue.close();
    await dropTestSchema(schema);
  }
}

describe('prepared statements (PostgreSQL)', () => {
  it('prepares the claims, the writes and the reads by id once on a connection', async () => {
    const prepared = await preparedAfterWork(true);
    const having = (fragment: string): { name: string; statement: string }[] =>
      prepared.filter((row) => row.statement.includes(fragment));
    assert.equal(
      having('SELECT job_id, record FROM').filter((row) => row.statement.includes('SKIP LOCKED')).length,
      1,
      'the key-order claim',
    );
    assert.equal(having('WITH RECURSIVE').length, 1, 'the fair claim');
    assert.equal(having('WITH opened AS').length, 1, "the claim's gate opening");
    assert.ok(having('INSERT INTO').length >= 1, 'the enqueue');
    assert.ok(
      having('UPDATE').some((row) => row.statement.includes('j.record = u.expected')),
      'the writes',
    );
    assert.equal(having('WHERE job_id = ANY($1::uuid[])').length, 1, "the read of the results' jobs");
    // Each text once: a statement run again is run by its name, not prepared twice.
    assert.equal(new Set(prepared.map((row) => row.statement)).size, prepared.length);
    for (const row of prepared) assert.match(row.name, /^telha_[0-9a-f]{32}$/);
  });

  it('prepares nothing with prepared_statements off, and does the same work', async () => {
    assert.deepEqual(await preparedAfterWork(false), []);
  });
});

describe('the claim EXECUTEd in its first round trip (PostgreSQL)', () => {
  it('writes kinds with quotes and backslashes, scopes and cursors as literals that claim the right jobs', async () => {
    const schema = uniqueSchema('literal');
    const store = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 1, pollIntervalMs: 60_000 });
    const queue = new Queue({ store, config: testConfig(), clock: new ManualClock(), services: false });
    const odd = "it's_a_\\kind');DROP_TABLE_jobs;--";
    const other = tenantScope("o'ther");
    try {
      for (const tag of ['1', '2', '3']) {
        await queue.enqueue({ kind: odd, payload: tag }, acme);
        await queue.enqueue({ kind: odd, payload: tag }, other);
        await queue.enqueue({ kind: 'plain', payload: tag }, acme);
      }
      // The first claim of each statement prepares it; the later ones ride in the BEGIN round trip.
      const taken: string[] = [];
      for (let i = 0; i < 3; i++) {
        for (const job of await queue.lease({ workerId: 'w', scope: acme, kinds: [odd], limit: 1 }))
          taken.push(`${job.tenant} ${job.kind === odd ? 'odd' : job.kind} ${Buffer.from(job.payload).toString()}`);
      }
      for (let i = 0; i < 3; i++) {
        for (const job of await queue.lease({ workerId: 'w', scope: ANY_SCOPE, kinds: [odd], limit: 1 }))
          taken.push(`${job.tenant} ${job.kind === odd ? 'odd' : job.kind} ${Buffer.from(job.payload).toString()}`);
      }
      assert.deepEqual(taken, [
        'acme odd 1',
        'acme odd 2',
        'acme odd 3',
        "o'ther odd 1",
        "o'ther odd 2",
        "o'ther odd 3",
      ]);
      const plain = await queue.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 10 });
      assert.deepEqual(
        plain.map((job) => Buffer.from(job.payload).toString()),
        ['1', '2', '3'],
      );
    } finally {
      await queue.close();
      await dropTestSchema(schema);
    }
  });
});

describe('plans kept across runs (PostgreSQL)', () => {
  it('runs the single enqueue and the fair claim with a kind limit on a kept plan after five runs', async () => {
    // PostgreSQL plans a prepared statement afresh for its first five runs, then keeps a generic
    // plan only if that costs no more than the fresh ones did. Parameter arrays of one element
    // made the fresh plans look cheaper every time, so these two were planned on every run.
    const schema = uniqueSchema('kept');
    const store = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 1, pollIntervalMs: 60_000 });
    const queue = new Queue({ store, config: testConfig(), clock: new ManualClock(), services: false });
    try {
      await queue.setKindLimit({ kindPrefix: 'mail', concurrency: 100 });
      const runs = 8;
      for (let i = 0; i < runs; i++) {
        await queue.enqueue({ kind: 'mail:welcome' }, tenantScope(`t${i % 2}`));
        const [job] = await queue.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 1 });
        assert.equal(job?.kind, 'mail:welcome');
      }
      const pool = (store as unknown as { pool: pg.Pool }).pool;
      const { rows } = await pool.query<{ statement: string; generic: string; custom: string }>(
        `SELECT statement, generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements`,
      );
      const plans = (fragment: string): { generic: number; custom: number } => {
        const row = rows.find((r) => r.statement.includes(fragment));
        assert.ok(row, `a prepared statement with ${fragment}`);
        return { generic: Number(row.generic), custom: Number(row.custom) };
      };
      for (const statement of ['INSERT INTO', 'WITH RECURSIVE lanes']) {
        assert.deepEqual(plans(statement), { generic: runs - 5, custom: 5 }, statement);
      }
    } finally {
      await queue.close();
      await dropTestSchema(schema);
    }
  });
});
