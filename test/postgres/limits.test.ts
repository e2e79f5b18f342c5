/**
 * Kind limits on a PostgreSQL store shared by several servers: a limited job's row carries its
 * lane, `jobs_ready` holds only unlimited rows and `jobs_lanes` the limited ones lane by lane, so
 * a claim never reads the rows of a lane without room; limited claims lock their lanes' rows of
 * `kind_limits`, so a concurrency holds exactly across servers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ManualClock } from '../../src/core/clock.ts';
import { ANY_SCOPE, JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { pgSchema } from '../../src/storage/postgres/connection.ts';
import { claimQuery, fairLaneClaimQuery, laneClaimQuery } from '../../src/storage/postgres/sql/claims.ts';
import { fenceOf, testConfig } from '../../src/testing/conformance/harness.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { jobScans } from '../support/pg-plans.ts';
import { eventually } from '../support/server.ts';

const acme = tenantScope('acme');
const FULL = 20_000;

/** `n` queues, each on its own store (its own pool: a server of its own) over one schema. */
async function servers(
  n: number,
  clock: ManualClock,
): Promise<{ queues: Queue[]; schema: string; close: () => Promise<void> }> {
  const schema = uniqueSchema('lanes');
  const queues: Queue[] = [];
  for (let i = 0; i < n; i++) {
    const store = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 4, pollIntervalMs: 60_000 });
    queues.push(new Queue({ store, config: testConfig(), clock, services: false }));
  }
  return {
    queues,
    schema,
    close: async () => {
      await Promise.all(queues.map((q) => q.close()));
      await dropTestSchema(schema);
    },
  };
}

/** Rows each scan of the jobs table found or read and dropped, summed. */
function rowsRead(scans: readonly [string | undefined, number, number][]): number {
  return scans.reduce((sum, [, found, dropped]) => sum + found + dropped, 0);
}

describe('postgres kind limits', () => {
  describe(`a full lane of ${FULL} ready jobs ahead of unlimited work`, () => {
    const clock = new ManualClock();
    let shared: Awaited<ReturnType<typeof servers>>;
    let queue: Queue;
    let table: string;
    let behind: JobRecord;

    before(async () => {
      shared = await servers(1, clock);
      queue = shared.queues[0] as Queue;
      table = pgSchema(shared.schema).table;
      for (let i = 0; i < FULL; i += 10_000)
        await queue.enqueueBatch(
          Array.from({ length: 10_000 }, () => ({ kind: 'bulk:mail' })),
          acme,
        );
      await queue.setKindLimit({ kindPrefix: 'bulk', concurrency: 1 });
      assert.equal((await queue.lease({ workerId: 'w', scope: acme, limit: 5 })).length, 1, 'the lane fills');
      behind = (await queue.enqueue({ kind: 'report' }, acme)).job;
    });
    after(() => shared.close());

    it('is not read by a claim in key order, nor by the fair order', async () => {
      const keyOrder = laneClaimQuery(table, acme, null);
      const scans = await jobScans(table, { text: keyOrder.text, values: [5, ['bulk'], [0], ...keyOrder.values] });
      assert.equal(rowsRead(scans), 1, JSON.stringify(scans));
      const fair = fairLaneClaimQuery(table, null);
      const fairScans = await jobScans(table, { text: fair.text, values: [5, ['bulk'], [0], ...fair.values] });
      assert.ok(rowsRead(fairScans) <= 3, JSON.stringify(fairScans));
      // The unlimited claim's scan never reads a lane's rows at all.
      const plain = claimQuery(table, acme, null);
      assert.deepEqual(await jobScans(table, { text: plain.text, values: [1, ...plain.values] }), [
        ['jobs_ready', 1, 0],
      ]);
      const leased = await queue.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 5 });
      assert.deepEqual(
        leased.map((j) => j.jobId),
        [behind.jobId],
      );
    });

    it('takes from the lane again when a job leaves it', async () => {
      const [held] = (await queue.list({ scope: acme, state: JobState.Leased, kindPrefix: 'bulk', limit: 1 })).jobs;
      assert.ok(held);
      await queue.complete(held.jobId, fenceOf(held));
      assert.deepEqual(
        (await queue.lease({ workerId: 'w', scope: acme, limit: 5 })).map((j) => j.kind),
        ['bulk:mail'],
      );
      assert.deepEqual(
        (await queue.kindLimits()).map((l) => [l.kindPrefix, l.leased]),
        [['bulk', 1]],
      );
    });
  });

  it('holds a concurrency exactly across two servers claiming at once', async () => {
    const clock = new ManualClock();
    const { queues, close } = await servers(2, clock);
    const [a, b] = queues as [Queue, Queue];
    try {
      await a.setKindLimit({ kindPrefix: 'k', concurrency: 3 });
      for (const tenant of ['t1', 't2', 't3', 't4'])
        await a.enqueueBatch(
          Array.from({ length: 20 }, (_, i) => ({ kind: i % 2 === 0 ? 'k:job' : 'free' })),
          tenantScope(tenant),
        );
      const claims = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          (i % 2 === 0 ? a : b).lease({
            workerId: `w${i}`,
            limit: 4,
            ...(i % 4 < 2 ? {} : { scope: tenantScope('t2') }),
          }),
        ),
      );
      const leased = claims.flat();
      assert.equal(leased.filter((j) => j.kind === 'k:job').length, 3, 'three of the lane, whoever claimed');
      assert.equal(new Set(leased.map((j) => j.jobId)).size, leased.length, 'no job leased twice');
      // The rest of the claims were unlimited work.
      const more = await Promise.all([a.lease({ workerId: 'x', limit: 100 }), b.lease({ workerId: 'y', limit: 100 })]);
      assert.equal(more.flat().filter((j) => j.kind === 'k:job').length, 0);
      assert.equal(leased.length + more.flat().length, 40 + 3);
      assert.deepEqual(
        (await b.kindLimits()).map((l) => [l.kindPrefix, l.leased]),
        [['k', 3]],
      );
    } finally {
      await close();
    }
  });

  it('moves the jobs of a cleared limit to the next longest lane, or out of every lane', async () => {
    const clock = new ManualClock();
    const { queues, close } = await servers(1, clock);
    const q = queues[0] as Queue;
    try {
      await q.setKindLimit({ kindPrefix: 'email', concurrency: 1 });
      await q.setKindLimit({ kindPrefix: 'email.bulk', concurrency: 1 });
      await q.enqueueBatch(
        Array.from({ length: 4 }, () => ({ kind: 'email.bulk.x' })),
        acme,
      );
      assert.equal((await q.lease({ workerId: 'w', scope: acme, limit: 10 })).length, 1);
      await q.clearKindLimit('email.bulk');
      // Now in lane `email`, with its leased job: full.
      assert.equal((await q.lease({ workerId: 'w', scope: acme, limit: 10 })).length, 0);
      await q.clearKindLimit('email');
      assert.equal((await q.lease({ workerId: 'w', scope: acme, limit: 10 })).length, 3);
    } finally {
      await close();
    }
  });

  it('puts a job enqueued while a limit is being set in its lane (the limit lock)', async () => {
    const clock = new ManualClock();
    const { queues, schema, close } = await servers(1, clock);
    const q = queues[0] as Queue;
    const table = pgSchema(schema).table;
    const setter = new pg.Client({ connectionString: TEST_PG_URL });
    await setter.connect();
    try {
      await setter.query(`BEGIN; LOCK TABLE ${table}.kind_limits IN EXCLUSIVE MODE`);
      await setter.query(
        `INSERT INTO ${table}.kind_limits (kind_prefix, concurrency, set_at, set_by) VALUES ('k', 1, 0, 'test')`,
      );
      const enqueued = q.enqueue({ kind: 'k:1' }, acme);
      await eventually(async () => {
        const { rows } = await setter.query<{ n: string }>(
          `SELECT count(*) AS n FROM pg_locks WHERE relation = '${table}.kind_limits'::regclass AND NOT granted`,
        );
        return Number(rows[0]?.n) > 0;
      }, 'the enqueue to wait for the limit lock');
      await setter.query('COMMIT');
      const { job } = await enqueued;
      const { rows } = await setter.query<{ lane: string | null }>(`SELECT lane FROM ${table}.jobs WHERE job_id = $1`, [
        job.jobId,
      ]);
      assert.deepEqual(rows, [{ lane: 'k' }]);
    } finally {
      await setter.end();
      await close();
    }
  });
});
