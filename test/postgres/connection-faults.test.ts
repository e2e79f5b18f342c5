/**
 * One store call at a time against a connection that dies under it: a
 * backend terminated mid-statement (what a PostgreSQL restart, a failover or
 * `idle_session_timeout` does), and, through a proxy, a write PostgreSQL
 * committed whose answer never arrived. A call either succeeds with the
 * effect applied exactly once or answers Unavailable; never a raw driver
 * error, which the server would report as INTERNAL.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import pg from 'pg';
import { ManualClock } from '../../src/core/clock.ts';
import { ErrorCode, isTelhaError, TelhaError } from '../../src/core/errors.ts';
import { silentLogger } from '../../src/core/logger.ts';
import * as transitions from '../../src/core/transitions.ts';
import { JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { decodeRecord, encodeRecord } from '../../src/codec/value.ts';
import { Queue } from '../../src/engine/queue.ts';
import { describeError } from '../../src/edge/status.ts';
import { Status } from '../../src/wire/service.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { pgSchema } from '../../src/storage/postgres/connection.ts';
import { fenceOf, testConfig } from '../../src/testing/conformance/harness.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { FaultProxy } from '../support/fault-proxy.ts';
import { eventually } from '../support/server.ts';

const acme = tenantScope('acme');

/** `url` with an application_name of this test's own, so it terminates only its own store's backends. */
function named(url: string, applicationName: string): string {
  const named = new URL(url);
  named.searchParams.set('application_name', applicationName);
  return named.toString();
}

function completions(job: JobRecord | null): number {
  return job?.events.filter((e) => e.transition === 'completed').length ?? 0;
}

describe('a PostgreSQL store whose backend is terminated mid-statement', () => {
  const schema = uniqueSchema('faults');
  const applicationName = `telha-faults-${process.pid}`;
  const clock = new ManualClock();
  let store: PostgresJobStore;
  let queue: Queue;
  let admin: pg.Client;
  /** Holds the lock; a connection of its own, since a transaction sees pg_stat_activity frozen. */
  let locker: pg.Client;

  before(async () => {
    store = await PostgresJobStore.open({ url: named(TEST_PG_URL, applicationName), schema, poolSize: 3 });
    queue = new Queue({ store, config: testConfig(), clock, services: false });
    admin = new pg.Client({ connectionString: TEST_PG_URL });
    locker = new pg.Client({ connectionString: TEST_PG_URL });
    await Promise.all([admin.connect(), locker.connect()]);
  });

  after(async () => {
    await Promise.all([admin.end(), locker.end()]);
    await queue.close();
    await dropTestSchema(schema);
  });

  /** Hold the jobs table so every statement of the store waits, where a test can terminate it. */
  async function lockJobs(): Promise<() => Promise<void>> {
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE ${pgSchema(schema).table}.jobs IN ACCESS EXCLUSIVE MODE`);
    return async () => void (await locker.query('ROLLBACK'));
  }

  /** Terminate the store's backends that wait for the lock; how many there were. */
  async function terminateWaiting(): Promise<number> {
    const { rows } = await admin.query<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
       WHERE application_name = $1 AND wait_event_type = 'Lock'`,
      [applicationName],
    );
    return rows[0]?.n ?? 0;
  }

  /** The store's backends that wait for the lock. */
  async function waiting(): Promise<number> {
    const { rows } = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
      [applicationName],
    );
    return rows[0]?.n ?? 0;
  }

  // PostgreSQL says nothing when a statement starts to wait for a lock, so the tests below look
  // at pg_stat_activity until one does.

  it('answers Unavailable when every try of a read dies mid-statement, and the next call succeeds', async () => {
    const { job } = await queue.enqueue({ kind: 'read' }, acme);
    const unlock = await lockJobs();
    let settled = false;
    const call = queue.show(job.jobId).then(
      () => null,
      (error: unknown) => error,
    );
    void call.finally(() => (settled = true));
    let kills = 0;
    try {
      while (!settled) {
        // Each try waits for the lock; terminate it, until the store gives up.
        await eventually(async () => {
          const terminated = settled ? 0 : await terminateWaiting();
          kills += terminated;
          return settled || terminated > 0;
        }, 'the read to wait for the lock or to give up');
      }
    } finally {
      await unlock();
    }
    const error = await call;
    assert.ok(error instanceof TelhaError, `a TelhaError, not ${String(error)}`);
    assert.equal(error.code, ErrorCode.Unavailable);
    assert.equal(describeError(error, silentLogger, {}).code, Status.UNAVAILABLE);
    assert.ok(kills >= 2, `the read was tried again before giving up (${kills} terminated)`);
    assert.equal((await queue.show(job.jobId)).jobId, job.jobId);
  });

  it('tries a claim again whose backend was terminated, and leases the job once', async () => {
    const { job } = await queue.enqueue({ kind: 'claim-retried' }, acme);
    const unlock = await lockJobs();
    const claim = queue.lease({ workerId: 'w', scope: acme, kinds: ['claim-retried'], limit: 1 });
    try {
      await eventually(async () => (await waiting()) === 1, 'the claim to wait for the lock');
      assert.equal(await terminateWaiting(), 1);
      // The claim's transaction was rolled back; its second try waits for the lock again.
      await eventually(async () => (await waiting()) === 1, 'the claim to be tried again');
    } finally {
      await unlock();
    }
    const [leased] = await claim;
    assert.equal(leased?.jobId, job.jobId);
    const stored = await queue.show(job.jobId);
    assert.equal(stored.state, JobState.Leased);
    assert.equal(stored.events.filter((e) => e.transition === 'leased').length, 1);
  });

  it('serves on after PostgreSQL terminates every connection it holds, idle ones and the listener too', async () => {
    const uncaught: unknown[] = [];
    const trap = (error: unknown): void => void uncaught.push(error);
    process.on('uncaughtException', trap);
    try {
      // Fill the pool with idle connections.
      await Promise.all([1, 2, 3].map(() => queue.counts(acme)));
      const listener = store.listenerPid;
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1`,
        [applicationName],
      );
      assert.ok((rows[0]?.n ?? 0) >= 2, 'the listener and at least one pooled connection were terminated');
      // The listener reconnects on its own; PostgreSQL gives no signal of it, so look.
      await eventually(
        () => Promise.resolve(store.listening && store.listenerPid !== listener),
        'the listener to reconnect',
      );
      const { job } = await queue.enqueue({ kind: 'after-terminate' }, acme);
      assert.equal((await queue.show(job.jobId)).state, JobState.Pending);
      await store.health();
      assert.deepEqual(uncaught, []);
    } finally {
      process.off('uncaughtException', trap);
    }
  });
});

describe('a PostgreSQL store whose write committed but whose answer was lost', () => {
  const schema = uniqueSchema('lost');
  const clock = new ManualClock();
  let proxy: FaultProxy;
  let queue: Queue;
  /** Another server's connection, straight to PostgreSQL. */
  let other: pg.Client;

  before(async () => {
    const target = new URL(TEST_PG_URL);
    proxy = await FaultProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
    const store = await PostgresJobStore.open({ url: proxy.url(TEST_PG_URL), schema, poolSize: 3 });
    queue = new Queue({ store, config: testConfig(), clock, services: false });
    other = new pg.Client({ connectionString: TEST_PG_URL });
    await other.connect();
  });

  after(async () => {
    await other.end();
    await queue.close();
    await proxy.close();
    await dropTestSchema(schema);
  });

  let kind = 0;
  let current: string;
  beforeEach(() => void (current = `lost.${++kind}`));

  async function leasedJob(): Promise<JobRecord> {
    await queue.enqueue({ kind: current }, acme);
    const [leased] = await queue.lease({ workerId: 'w', scope: acme, kinds: [current], limit: 1 });
    assert.ok(leased);
    return leased;
  }

  /** The compare-and-set write of `update` and `updateMany` (inside the CTE that appends its transitions log rows). */
  const casWrite = /^\s*(WITH w AS \(\s*)?UPDATE \S+\.jobs AS j/;
  /** An enqueue's INSERT, likewise. */
  const insert = /^\s*(WITH w AS \(\s*)?INSERT INTO \S+\.jobs/;

  for (const [when, what] of [
    ['after-commit', 'committed but its answer was lost'],
    ['before', 'never reached PostgreSQL'],
  ] as const) {
    it(`completes a job once when its completion ${what}`, async () => {
      const leased = await leasedJob();
      const cut = proxy.cutOnce(casWrite, when);
      const { job } = await queue.complete(leased.jobId, fenceOf(leased));
      await cut;
      assert.equal(job.state, JobState.Completed);
      assert.equal(completions(await queue.show(leased.jobId)), 1);
    });
  }

  it('answers Unavailable when a write committed, its answer was lost, and the job changed before the store could tell', async () => {
    const leased = await leasedJob();
    const cut = proxy.cutOnce(casWrite, 'after-commit');
    // The store's look at the row after the lost answer is held while another server completes the job.
    const lookup = proxy.holdOnce(/WHERE job_id = ANY/);
    const beat = queue.heartbeat(leased.jobId, fenceOf(leased)).then(
      () => null,
      (error: unknown) => error,
    );
    await cut;
    await lookup.held;
    const { table } = pgSchema(schema);
    const [row] = (
      await other.query<{ record: Buffer }>(`SELECT record FROM ${table}.jobs WHERE job_id = $1`, [leased.jobId])
    ).rows;
    assert.ok(row);
    const completed = transitions.complete(decodeRecord(row.record, 'job'), fenceOf(leased), clock.now() + 1);
    await other.query(`UPDATE ${table}.jobs SET state = $2, record = $3 WHERE job_id = $1`, [
      leased.jobId,
      completed.state,
      encodeRecord(completed),
    ]);
    lookup.release();
    const error = await beat;
    assert.ok(isTelhaError(error, ErrorCode.Unavailable), `unavailable, not ${String(error)}`);
    const stored = await queue.show(leased.jobId);
    assert.equal(stored.state, JobState.Completed, "the other server's write is kept");
    assert.equal(completions(stored), 1);
  });

  it('leases a job once when the claim committed but its answer was lost', async () => {
    const { job } = await queue.enqueue({ kind: current }, acme);
    const cut = proxy.cutOnce(/^COMMIT$/, 'after-commit');
    const leased = await queue.lease({ workerId: 'w', scope: acme, kinds: [current], limit: 1 });
    await cut;
    assert.deepEqual(
      leased.map((j) => j.jobId),
      [job.jobId],
    );
    const stored = await queue.show(job.jobId);
    assert.equal(stored.state, JobState.Leased);
    assert.equal(stored.events.filter((e) => e.transition === 'leased').length, 1);
  });

  it('answers each item of a batch once when the batch committed but its answer was lost', async () => {
    await queue.enqueueBatch([{ kind: current }, { kind: current }, { kind: current }], acme);
    const leased = await queue.lease({ workerId: 'w', scope: acme, kinds: [current], limit: 3 });
    assert.equal(leased.length, 3);
    const cut = proxy.cutOnce(casWrite, 'after-commit');
    const results = await queue.completeEach(leased.map((job) => ({ jobId: job.jobId, fence: fenceOf(job) })));
    await cut;
    assert.deepEqual(
      results.map((r) => r.ok),
      [true, true, true],
    );
    for (const job of leased) assert.equal(completions(await queue.show(job.jobId)), 1);
  });

  it('completes a job and creates its chained jobs once when the COMMIT was lost', async () => {
    const leased = await leasedJob();
    const cut = proxy.cutOnce(/^COMMIT$/, 'after-commit');
    const { job, successors } = await queue.complete(leased.jobId, fenceOf(leased), {
      successors: [{ kind: `${current}.next` }, { kind: `${current}.next` }],
    });
    await cut;
    assert.equal(job.state, JobState.Completed);
    assert.equal(successors.length, 2);
    assert.equal(completions(await queue.show(leased.jobId)), 1);
    const chained = (await queue.counts(acme)).filter((r) => r.kind === `${current}.next`);
    assert.deepEqual(chained, [{ state: JobState.Pending, kind: `${current}.next`, count: 2 }]);
  });

  it('creates each job once when an enqueue committed but its answer was lost', async () => {
    const { job: holder } = await queue.enqueue({ kind: current, idempotencyKey: `${current}-held` }, acme);
    const cut = proxy.cutOnce(insert, 'after-commit');
    const results = await queue.enqueueBatch(
      [
        { kind: current, idempotencyKey: `${current}-held` },
        { kind: current },
        { kind: current, idempotencyKey: `${current}-new` },
      ],
      acme,
    );
    await cut;
    assert.deepEqual(
      results.map((r) => r.created),
      [false, true, true],
    );
    assert.equal(results[0]?.job.jobId, holder.jobId);
    const stored = (await queue.counts(acme)).filter((r) => r.kind === current);
    assert.deepEqual(stored, [{ state: JobState.Pending, kind: current, count: 3 }]);
  });

  it('tries an enqueue again whose INSERT never reached PostgreSQL', async () => {
    const cut = proxy.cutOnce(insert, 'before');
    const [result] = await queue.enqueueBatch([{ kind: current }], acme);
    await cut;
    assert.equal(result?.created, true);
    const stored = (await queue.counts(acme)).filter((r) => r.kind === current);
    assert.deepEqual(stored, [{ state: JobState.Pending, kind: current, count: 1 }]);
  });
});
