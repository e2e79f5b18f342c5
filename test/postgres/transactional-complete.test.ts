/**
 * A leased job completed or failed in the application's own transaction (`completeInTransaction`,
 * `failInTransaction`): it happens together with the application's writes or not at all, a stale
 * fence leaves the transaction unable to commit, and the server that leased the job learns its
 * lease ended.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { TelhaClient } from '../../src/client/client.ts';
import { ErrorCode, LeaseConflictError, TelhaError } from '../../src/core/errors.ts';
import { JobState, tenantScope, type JobRecord, type LeaseFence } from '../../src/core/types.ts';
import { completeInTransaction, failInTransaction } from '../../src/storage/postgres/transactional.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { lastTransition } from '../support/events.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const acme = tenantScope('acme');
const TTL_SECS = 30;
const BACKOFF_SECS = 10;

function refusedWith(code: ErrorCode, field?: string): (e: unknown) => boolean {
  return (e) => e instanceof TelhaError && e.code === code && (field === undefined || e.field === field);
}

describe('completing and failing a job in the application’s transaction', () => {
  const schema = uniqueSchema('txdone');
  let server: TestServer;
  let client: TelhaClient;
  let app: pg.Client;
  let kinds = 0;
  const settings = (): { schema: string; config: TestServer['queue']['config']; clock: TestServer['clock'] } => ({
    schema,
    config: server.queue.config,
    clock: server.clock,
  });

  before(async () => {
    server = await startTestServer({
      // Readers look at the log again only when told (no poll within a test): Watch sees an
      // application's commit by its notification or not at all.
      storage: { kind: 'postgres', url: TEST_PG_URL, schema, poll_interval_ms: 600_000 },
      jobs: { lease_ttl_secs: TTL_SECS, max_attempts: 2, backoff_base_secs: BACKOFF_SECS, backoff_factor: 1 },
      server: { http_address: '' },
    });
    client = new TelhaClient({ address: server.address });
    app = new pg.Client({ connectionString: TEST_PG_URL });
    await app.connect();
    await app.query(`CREATE TABLE "${schema}".orders (id text PRIMARY KEY)`);
  });
  after(async () => {
    await app.end();
    client.close();
    await server.close();
    await dropTestSchema(schema);
  });

  /** A job of a kind of its own, leased by `w1` through the server's queue. */
  async function leased(): Promise<{ job: JobRecord; fence: LeaseFence }> {
    const kind = `order.${++kinds}`;
    await server.queue.enqueue({ kind }, acme);
    const job = await server.queue.leaseNext({ workerId: 'w1', kinds: [kind], scope: acme });
    assert.ok(job);
    return { job, fence: { workerId: 'w1', leaseGeneration: job.leaseGeneration } };
  }

  /** Once the server's Watch is open: the transitions of jobs of `kind` it delivers, up to the first completion. */
  async function watchUntilCompleted(kind: string): Promise<{ done: Promise<string[]> }> {
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const seen = (async () => {
      const events: string[] = [];
      for await (const event of client.watch({ kindPrefix: kind, onOpen: () => opened() })) {
        events.push(`${event.job.jobId} ${event.transition}`);
        if (event.transition === 'completed') break;
      }
      return events;
    })();
    await Promise.race([open, seen]);
    return { done: seen };
  }

  async function orderExists(id: string): Promise<boolean> {
    return (await app.query('SELECT 1 FROM "' + schema + '".orders WHERE id = $1', [id])).rows.length === 1;
  }

  it(
    'commits the completion, its result and successors together with the application’s row',
    { timeout: 60_000 },
    async () => {
      const { job, fence } = await leased();
      const watch = await watchUntilCompleted(job.kind);

      await app.query('BEGIN');
      await app.query(`INSERT INTO "${schema}".orders VALUES ('order-1')`);
      const done = await completeInTransaction(
        app,
        job.jobId,
        fence,
        { result: Buffer.from('{"shipped":true}'), successors: [{ kind: 'receipt', payload: 'order-1' }] },
        acme,
        settings(),
      );
      assert.equal(done.job.state, JobState.Completed);
      // Until the application commits, everyone else still sees the lease.
      assert.equal((await server.queue.show(job.jobId)).state, JobState.Leased);
      await app.query('COMMIT');

      const stored = await server.queue.show(job.jobId);
      assert.equal(stored.state, JobState.Completed);
      assert.equal(Buffer.from(stored.result ?? []).toString(), '{"shipped":true}');
      assert.equal(lastTransition(stored), 'completed');
      assert.ok(await orderExists('order-1'));
      const [successor] = done.successors;
      assert.ok(successor?.created);
      const chained = await server.queue.show(successor.job.jobId);
      assert.deepEqual([chained.state, chained.kind, chained.tenant], [JobState.Pending, 'receipt', 'acme']);
      // The server's watchers learn of it from the transitions log.
      assert.deepEqual(await watch.done, [`${job.jobId} completed`]);
    },
  );

  it(
    'wakes the watchers of every server when a completion with nothing to enqueue commits',
    { timeout: 60_000 },
    async () => {
      const { job, fence } = await leased();
      const watch = await watchUntilCompleted(job.kind);
      await app.query('BEGIN');
      await completeInTransaction(app, job.jobId, fence, {}, acme, settings());
      await app.query('COMMIT');
      // Only the commit's notification tells the server to read the log again (its poll is off).
      assert.deepEqual(await watch.done, [`${job.jobId} completed`]);
    },
  );

  it('refuses a stale fence, and the application’s COMMIT then keeps nothing', async () => {
    const { job, fence } = await leased();
    // The lease runs out, the reaper hands the job on, and w1 leases it again: the first fence is superseded.
    server.clock.advance((TTL_SECS + 1) * 1_000_000);
    assert.equal((await server.queue.maintenance.reapExpired()).reaped, 1);
    server.clock.advance((BACKOFF_SECS + 1) * 1_000_000);
    const again = await server.queue.leaseNext({ workerId: 'w1', kinds: [job.kind], scope: acme });
    assert.equal(again?.jobId, job.jobId);

    await app.query('BEGIN');
    await app.query(`INSERT INTO "${schema}".orders VALUES ('order-stale')`);
    await assert.rejects(
      completeInTransaction(app, job.jobId, fence, {}, acme, settings()),
      (e: unknown) => e instanceof LeaseConflictError && e.reason === 'generation_superseded',
    );
    // The application ignores the refusal and commits: PostgreSQL rolls back instead.
    const commit = await app.query('COMMIT');
    assert.equal(commit.command, 'ROLLBACK');
    assert.equal(await orderExists('order-stale'), false);
    const stored = await server.queue.show(job.jobId);
    assert.deepEqual([stored.state, stored.leaseGeneration], [JobState.Leased, again.leaseGeneration]);
  });

  it('refuses a cancelled job’s fence with reason cancelled', async () => {
    const { job, fence } = await leased();
    await server.queue.cancel(job.jobId);
    await app.query('BEGIN');
    await assert.rejects(
      completeInTransaction(app, job.jobId, fence, {}, acme, settings()),
      (e: unknown) => e instanceof LeaseConflictError && e.reason === 'cancelled',
    );
    await app.query('ROLLBACK');
    assert.equal((await server.queue.show(job.jobId)).state, JobState.Cancelled);
  });

  it('leaves the job leased after a rollback, for its worker to complete', async () => {
    const { job, fence } = await leased();
    await app.query('BEGIN');
    await app.query(`INSERT INTO "${schema}".orders VALUES ('order-rolled-back')`);
    await completeInTransaction(app, job.jobId, fence, {}, acme, settings());
    await app.query('ROLLBACK');
    assert.equal(await orderExists('order-rolled-back'), false);
    assert.equal((await server.queue.show(job.jobId)).state, JobState.Leased);
    const { job: completed } = await server.queue.complete(job.jobId, fence);
    assert.equal(completed.state, JobState.Completed);
    assert.deepEqual(
      completed.events.map((e) => e.transition),
      ['enqueued', 'leased', 'completed'],
    );
  });

  it('ends the lease the server holds: its heartbeat is answered stale, and the reaper leaves the job', async () => {
    const { job, fence } = await leased();
    // The server remembers the lease it wrote and heartbeats from it; it learns the truth from the row.
    await server.queue.heartbeat(job.jobId, fence);
    await app.query('BEGIN');
    await completeInTransaction(app, job.jobId, fence, {}, acme, settings());
    // The row is locked until the application commits: a heartbeat sent now waits for it, then is refused.
    const heartbeat = assert.rejects(
      server.queue.heartbeat(job.jobId, fence),
      (e: unknown) => e instanceof LeaseConflictError && e.reason === 'worker_mismatch',
    );
    await app.query('COMMIT');
    await heartbeat;
    await assert.rejects(server.queue.heartbeat(job.jobId, fence), LeaseConflictError);
    await assert.rejects(server.queue.complete(job.jobId, fence), LeaseConflictError);
    // Through the wire too: the SDK hears ABORTED with the reason, as for a job completed elsewhere.
    await assert.rejects(
      client.heartbeat(job.jobId, fence),
      (e: unknown) => e instanceof LeaseConflictError && e.reason === 'worker_mismatch',
    );
    // Past the lease's deadline the reaper passes it by (other tests' leases expire too, and go).
    server.clock.advance((TTL_SECS + 1) * 1_000_000);
    await server.queue.maintenance.reapExpired();
    const stored = await server.queue.show(job.jobId);
    assert.equal(stored.state, JobState.Completed);
    assert.equal(lastTransition(stored), 'completed');
    const stillLeased = (await server.queue.leased({ workerId: 'w1' })).map((j) => j.jobId);
    assert.equal(stillLeased.includes(job.jobId), false);
  });

  it('fails with the store’s rules: Pending behind the backoff, then Dead at the last attempt', async () => {
    const { job, fence } = await leased();
    await app.query('BEGIN');
    await app.query(`INSERT INTO "${schema}".orders VALUES ('order-failed-1')`);
    const failedAt = server.clock.now();
    const retried = await failInTransaction(app, job.jobId, fence, { error: 'card declined' }, acme, settings());
    await app.query('COMMIT');
    const first = await server.queue.show(job.jobId);
    assert.deepEqual(first, retried);
    assert.equal(first.state, JobState.Pending);
    assert.equal(first.attempts, 1);
    assert.ok(first.notBefore !== null && first.notBefore >= failedAt + BACKOFF_SECS * 1_000_000);
    assert.equal(await server.queue.leaseNext({ workerId: 'w1', kinds: [job.kind], scope: acme }), null);

    server.clock.advance((BACKOFF_SECS + 1) * 1_000_000);
    const second = await server.queue.leaseNext({ workerId: 'w1', kinds: [job.kind], scope: acme });
    assert.equal(second?.jobId, job.jobId);
    await app.query('BEGIN');
    const dead = await failInTransaction(
      app,
      job.jobId,
      { workerId: 'w1', leaseGeneration: second.leaseGeneration },
      { error: 'card declined again' },
      acme,
      settings(),
    );
    await app.query('COMMIT');
    assert.equal(dead.state, JobState.Dead);
    assert.deepEqual(await server.queue.show(job.jobId), dead);
    assert.ok(await orderExists('order-failed-1'));
  });

  it('dead-letters at once a permanent failure', async () => {
    const { job, fence } = await leased();
    await app.query('BEGIN');
    const dead = await failInTransaction(app, job.jobId, fence, { error: 'no such card', permanent: true }, acme, {
      ...settings(),
    });
    await app.query('COMMIT');
    assert.deepEqual([dead.state, dead.attempts], [JobState.Dead, 1]);
    assert.equal((await server.queue.show(job.jobId)).state, JobState.Dead);
  });

  it('refuses bad input naming the field, writes nothing, and leaves the transaction unable to commit', async () => {
    const { job, fence } = await leased();
    const big = Buffer.alloc(server.queue.config.jobs.max_result_bytes + 1);
    const cases: [string, () => Promise<unknown>, ErrorCode, string?][] = [
      ['job_id', () => completeInTransaction(app, 'nope', fence, {}, acme, settings()), ErrorCode.InvalidArgument],
      [
        'lease_generation',
        () => completeInTransaction(app, job.jobId, { workerId: 'w1', leaseGeneration: -1 }, {}, acme, settings()),
        ErrorCode.InvalidArgument,
      ],
      [
        'result',
        () => completeInTransaction(app, job.jobId, fence, { result: big }, acme, settings()),
        ErrorCode.InvalidArgument,
      ],
      [
        'successors[1].kind',
        () =>
          completeInTransaction(
            app,
            job.jobId,
            fence,
            { successors: [{ kind: 'fine' }, { kind: '' }] },
            acme,
            settings(),
          ),
        ErrorCode.InvalidArgument,
      ],
      [
        'error',
        () => failInTransaction(app, job.jobId, fence, { error: 42 as unknown as string }, acme, settings()),
        ErrorCode.InvalidArgument,
      ],
      // Another tenant's job does not exist for it.
      [
        '',
        () => completeInTransaction(app, job.jobId, fence, {}, tenantScope('other'), settings()),
        ErrorCode.NotFound,
      ],
    ];
    for (const [field, call, code] of cases) {
      await app.query('BEGIN');
      await app.query(`INSERT INTO "${schema}".orders VALUES ('order-bad')`);
      await assert.rejects(call(), refusedWith(code, field === '' ? undefined : field), field);
      assert.equal((await app.query('COMMIT')).command, 'ROLLBACK', field);
      assert.equal(await orderExists('order-bad'), false, field);
    }
    const stored = await server.queue.show(job.jobId);
    assert.deepEqual(stored, job);
  });

  it('aborts a REPEATABLE READ transaction whose snapshot predates a change to the job', async () => {
    const { job, fence } = await leased();
    await app.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await app.query(`INSERT INTO "${schema}".orders VALUES ('order-snapshot')`);
    // The holder's heartbeat changes the row after the snapshot was taken.
    await server.queue.heartbeat(job.jobId, fence);
    await assert.rejects(
      completeInTransaction(app, job.jobId, fence, {}, acme, settings()),
      (e: unknown) => (e as { code?: unknown }).code === '40001',
    );
    assert.equal((await app.query('COMMIT')).command, 'ROLLBACK');
    assert.equal(await orderExists('order-snapshot'), false);
    assert.equal((await server.queue.show(job.jobId)).state, JobState.Leased);
  });

  it('refuses a client outside a transaction before writing anything', async () => {
    const { job, fence } = await leased();
    await assert.rejects(
      completeInTransaction(app, job.jobId, fence, {}, acme, settings()),
      refusedWith(ErrorCode.FailedPrecondition),
    );
    assert.equal((await server.queue.show(job.jobId)).state, JobState.Leased);
  });
});
