/**
 * Paused jobs out of the ready index: a Pending row a pause covers is `held`, set by every write
 * that makes a row Pending and by pause and resume, under the pause lock, so a claim reaches the
 * work behind any number of paused jobs without reading one of them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ManualClock } from '../../src/core/clock.ts';
import { ANY_SCOPE, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { encodePause, pauseScopeBytes } from '../../src/codec/pauses.ts';
import { Queue } from '../../src/engine/queue.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { pgSchema } from '../../src/storage/postgres/connection.ts';
import { claimQuery, fairClaimQuery } from '../../src/storage/postgres/sql/claims.ts';
import { enqueueInTransaction } from '../../src/storage/postgres/transactional.ts';
import { fenceOf, testConfig } from '../../src/testing/conformance/harness.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { jobScans } from '../support/pg-plans.ts';
import { eventually } from '../support/server.ts';

const acme = tenantScope('acme');
const PAUSED = 20_000;

interface Server {
  readonly queue: Queue;
  readonly schema: string;
  readonly table: string;
  readonly clock: ManualClock;
  readonly sql: <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>;
  readonly close: () => Promise<void>;
}

async function server(): Promise<Server> {
  const schema = uniqueSchema('held');
  const clock = new ManualClock();
  const store = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 4, pollIntervalMs: 60_000 });
  const queue = new Queue({ store, config: testConfig(), clock, services: false });
  const admin = new pg.Client({ connectionString: TEST_PG_URL });
  await admin.connect();
  return {
    queue,
    schema,
    table: pgSchema(schema).table,
    clock,
    sql: async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
      (await admin.query<R>(text, values)).rows,
    close: async () => {
      await queue.close();
      await admin.end();
      await dropTestSchema(schema);
    },
  };
}

/** The ids of the held rows, sorted. */
async function heldIds(s: Server): Promise<string[]> {
  const rows = await s.sql<{ job_id: string }>(`SELECT job_id FROM ${s.table}.jobs WHERE held ORDER BY job_id`);
  return rows.map((r) => r.job_id);
}

async function heldCount(s: Server): Promise<number> {
  const rows = await s.sql<{ n: string }>(`SELECT count(*) AS n FROM ${s.table}.jobs WHERE held`);
  return Number(rows[0]?.n);
}

/** Whether some connection waits for a lock on `kind_pauses` (the pause lock). */
async function waitingOnPauseLock(s: Server): Promise<boolean> {
  const rows = await s.sql<{ n: string }>(
    `SELECT count(*) AS n FROM pg_locks WHERE relation = '${s.table}.kind_pauses'::regclass AND NOT granted`,
  );
  return Number(rows[0]?.n) > 0;
}

describe('postgres paused jobs are held out of the ready index', () => {
  describe(`a pause over ${PAUSED} jobs at the head of the ready order`, () => {
    let s: Server;
    let behind: JobRecord;

    before(async () => {
      s = await server();
      for (let i = 0; i < PAUSED; i += 10_000)
        await s.queue.enqueueBatch(
          Array.from({ length: 10_000 }, () => ({ kind: 'bulk:mail' })),
          acme,
        );
      await s.queue.pause({ kindPrefix: 'bulk:', scope: acme });
      // Enqueued while paused: held at once.
      await s.queue.enqueueBatch(
        Array.from({ length: 100 }, () => ({ kind: 'bulk:mail' })),
        acme,
      );
      behind = (await s.queue.enqueue({ kind: 'report' }, acme)).job;
    });
    after(() => s.close());

    it('holds every paused row, the ones enqueued before the pause and after it', async () => {
      assert.equal(await heldCount(s), PAUSED + 100);
    });

    it('claims the job behind them without reading a paused row, in key order and in the fair order', async () => {
      const table = s.table;
      const keyOrder = claimQuery(table, acme, null);
      assert.deepEqual(await jobScans(table, { text: keyOrder.text, values: [1, ...keyOrder.values] }), [
        ['jobs_ready', 1, 0],
      ]);
      const every = claimQuery(table, ANY_SCOPE, null);
      assert.deepEqual(await jobScans(table, { text: every.text, values: [1, ...every.values] }), [
        ['jobs_ready', 1, 0],
      ]);
      const fair = await jobScans(table, fairClaimQuery(table, null, null, 1, []));
      const read = fair.reduce((sum, [, found, dropped]) => sum + found + dropped, 0);
      assert.ok(read <= 5, `the fair claim read ${read} rows: ${JSON.stringify(fair)}`);
      assert.equal((await s.queue.leaseNext({ workerId: 'w', scope: acme }))?.jobId, behind.jobId);
    });

    it('keeps rows another pause covers held at a resume, and releases them at the last', async () => {
      await s.queue.pause({ kindPrefix: 'bulk', scope: 'everywhere' });
      await s.queue.resume({ kindPrefix: 'bulk:', scope: acme });
      assert.equal(await heldCount(s), PAUSED + 100);
      assert.equal(await s.queue.leaseNext({ workerId: 'w', scope: acme }), null);
      await s.queue.resume({ kindPrefix: 'bulk', scope: 'everywhere' });
      assert.equal(await heldCount(s), 0);
      assert.equal((await s.queue.leaseNext({ workerId: 'w', scope: acme }))?.kind, 'bulk:mail');
    });
  });

  it('holds a job made Pending again while its kind is paused: retry, release, reap, operator retry, transactional enqueue', async () => {
    const s = await server();
    try {
      await s.queue.enqueueBatch(
        Array.from({ length: 4 }, () => ({ kind: 'email' })),
        acme,
      );
      const [failed, released, expired, dead] = await s.queue.lease({ workerId: 'w', scope: acme, limit: 4 });
      assert.ok(failed && released && expired && dead);
      await s.queue.pause({ kindPrefix: 'email', scope: acme });
      assert.deepEqual(await heldIds(s), [], 'leased jobs are not held');

      await s.queue.fail(failed.jobId, fenceOf(failed), { error: 'again' });
      await s.queue.release(released.jobId, fenceOf(released));
      await s.queue.fail(dead.jobId, fenceOf(dead), { error: 'no', permanent: true });
      await s.queue.retry(dead.jobId);
      s.clock.advanceSeconds(3_600);
      assert.equal((await s.queue.maintenance.reapExpired()).reaped, 1);
      const app = new pg.Client({ connectionString: TEST_PG_URL });
      await app.connect();
      let enqueued: string;
      try {
        await app.query('BEGIN');
        const [result] = await enqueueInTransaction(app, [{ kind: 'email' }], acme, {
          schema: s.schema,
          clock: s.clock,
        });
        assert.ok(result);
        enqueued = result.job.jobId;
        await app.query('COMMIT');
      } finally {
        await app.end();
      }
      assert.deepEqual(await heldIds(s), [failed.jobId, released.jobId, expired.jobId, dead.jobId, enqueued].sort());
      s.clock.advanceSeconds(3_600);
      assert.deepEqual(await s.queue.lease({ workerId: 'w', scope: acme, limit: 10 }), []);
      await s.queue.resume({ kindPrefix: 'email', scope: acme });
      assert.equal((await s.queue.lease({ workerId: 'w', scope: acme, limit: 10 })).length, 5);
    } finally {
      await s.close();
    }
  });

  describe('the pause lock', () => {
    it('makes a write that waited for a pause see it', async () => {
      const s = await server();
      const pauser = new pg.Client({ connectionString: TEST_PG_URL });
      await pauser.connect();
      try {
        const pause = { scope: acme, kindPrefix: 'email', pausedAt: s.clock.now(), by: 'test' } as const;
        await pauser.query(`BEGIN; LOCK TABLE ${s.table}.kind_pauses IN EXCLUSIVE MODE`);
        await pauser.query(`INSERT INTO ${s.table}.kind_pauses (scope, kind_prefix, record) VALUES ($1, $2, $3)`, [
          pauseScopeBytes(pause.scope),
          pause.kindPrefix,
          encodePause(pause),
        ]);
        const enqueue = s.queue.enqueue({ kind: 'email' }, acme);
        await eventually(() => waitingOnPauseLock(s), 'the enqueue to wait for the pause lock');
        await pauser.query('COMMIT');
        const { job } = await enqueue;
        assert.deepEqual(await heldIds(s), [job.jobId]);
        assert.equal(await s.queue.leaseNext({ workerId: 'w', scope: acme }), null);
      } finally {
        await pauser.end();
        await s.close();
      }
    });

    it('makes a pause wait for a write in flight, then hold its job', async () => {
      const s = await server();
      const app = new pg.Client({ connectionString: TEST_PG_URL });
      await app.connect();
      try {
        await app.query('BEGIN');
        const [result] = await enqueueInTransaction(app, [{ kind: 'email' }], acme, {
          schema: s.schema,
          clock: s.clock,
        });
        const paused = s.queue.pause({ kindPrefix: 'email', scope: acme });
        await eventually(() => waitingOnPauseLock(s), 'the pause to wait for the enqueue');
        await app.query('COMMIT');
        await paused;
        assert.deepEqual(await heldIds(s), [result?.job.jobId]);
      } finally {
        await app.end();
        await s.close();
      }
    });
  });
});
