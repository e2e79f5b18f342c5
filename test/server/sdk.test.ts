import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { LeaseConflictError } from '../../src/core/errors.ts';
import { JobState, SYSTEM_SCOPE } from '../../src/core/types.ts';
import { MAINTENANCE_WORKER_ID, PRUNE_KIND } from '../../src/engine/maintenance.ts';
import { TelhaClient } from '../../src/client/client.ts';
import type { RemoteJob } from '../../src/client/convert.ts';
import { PermanentError, Worker, type JobContext } from '../../src/client/worker.ts';
import { tenantScope } from '../../src/core/types.ts';
import { lastTransition, parked, written } from '../support/events.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const acme = tenantScope('acme');

/** A promise with its resolve handle, for waiting on events instead of time. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('the SDK against a live server', () => {
  let server: TestServer;
  let client: TelhaClient;

  beforeEach(async () => {
    server = await startTestServer({ jobs: { backoff_base_secs: 0 } });
    client = new TelhaClient({ address: server.address });
  });
  afterEach(async () => {
    await server.close();
  });

  it('runs a job through its whole lifecycle: enqueue, lease, heartbeat, complete', async () => {
    const { job } = await client.enqueue({ kind: 'email', payload: '{"to":"a@b.c"}' }, acme);
    const done = deferred<JobContext>();
    const completed = deferred();
    const extended = written(
      server.queue,
      'a heartbeat',
      (r) => r.jobId === job.jobId && lastTransition(r) === 'extended',
    );
    const worker = new Worker({
      address: server.address,
      kinds: ['email'],
      concurrency: 2,
      heartbeatFraction: 0.001, // beat as often as allowed, to see heartbeats on the record
      onCompleted: () => completed.resolve(),
      handler: async (ctx) => {
        // Run until the server has stored a heartbeat for this lease.
        await extended;
        done.resolve(ctx);
      },
    }).start();
    const ctx = await done.promise;
    await completed.promise;
    await worker.close();
    assert.equal(ctx.jobId, job.jobId);
    assert.equal(ctx.kind, 'email');
    assert.equal(ctx.tenant, 'acme');
    assert.equal(Buffer.from(ctx.payload).toString(), '{"to":"a@b.c"}');
    assert.equal(ctx.leaseGeneration, 1);
    assert.equal(ctx.attempts, 0);
    const shown = await client.show(job.jobId);
    assert.equal(shown.state, JobState.Completed);
    assert.deepEqual(
      shown.events.map((e) => e.transition),
      ['enqueued', 'leased', 'extended', 'completed'],
    );
  });

  it('fails a throwing handler with backoff, and dead-letters a PermanentError', async () => {
    // A backoff long enough that the failed job is not leased again before the worker closes.
    await server.close();
    server = await startTestServer({ jobs: { backoff_base_secs: 60 } });
    client = new TelhaClient({ address: server.address });
    const retryable = await client.enqueue({ kind: 'flaky' }, acme);
    const permanent = await client.enqueue({ kind: 'broken' }, acme);
    const failures = written(server.queue, 'both failures', (r) => r.attempts === 1 && r.state !== JobState.Leased, 2);
    const worker = new Worker({
      address: server.address,
      handler: (ctx) =>
        Promise.reject(ctx.kind === 'broken' ? new PermanentError('bad input') : new Error('try again')),
    }).start();
    await failures;
    await worker.close();
    const r = await client.show(retryable.job.jobId);
    const p = await client.show(permanent.job.jobId);
    assert.equal(p.state, JobState.Dead);
    assert.match(p.events.find((e) => e.transition === 'failed')?.detail ?? '', /permanent: bad input/);
    assert.equal(r.attempts, 1);
    assert.equal(r.state, JobState.Pending);
    assert.ok((r.notBefore ?? 0) > server.clock.now(), 'gated by its backoff');
    const detail = r.events.find((e) => e.transition === 'failed')?.detail ?? '';
    assert.match(detail, /try again\n {4}at /, "the handler's stack frames follow its message");
    assert.match(detail, /sdk\.test\.ts:\d+:\d+/, 'down to the line that threw');
  });

  it('stores checkpoints, extends the lease with them, and chains successors on completion', async () => {
    const { job } = await client.enqueue({ kind: 'sync:page' }, acme);
    const completed = deferred();
    const worker = new Worker({
      address: server.address,
      kinds: ['sync:page'],
      onCompleted: () => completed.resolve(),
      handler: async (ctx) => {
        assert.equal(ctx.continuation, null);
        await ctx.checkpoint(Buffer.from('page=1'));
        const mid = await client.show(ctx.jobId);
        assert.equal(Buffer.from(mid.continuation ?? []).toString(), 'page=1');
        ctx.chain({ kind: 'sync:next', payload: 'page=2' });
      },
    }).start();
    await completed.promise;
    await worker.close();
    const done = await client.show(job.jobId);
    assert.equal(done.state, JobState.Completed);
    assert.ok(done.events.some((e) => e.transition === 'checkpoint'));
    const next = await client.list({ scope: acme, kindPrefix: 'sync:next' });
    assert.equal(next.jobs.length, 1);
    assert.equal(next.jobs[0]?.state, JobState.Pending);
    assert.equal(Buffer.from(next.jobs[0]?.payload ?? []).toString(), 'page=2');
  });

  it('wakes a parked lease call when a matching job is enqueued, without waiting out its timeout', async () => {
    const waiting = parked(server.queue);
    const lease = client.lease({ workerId: 'w1', kinds: ['late'], waitMs: 25_000 });
    await waiting;
    const before = { ...server.queue.waits.ended };
    const { job } = await client.enqueue({ kind: 'late' }, acme);
    const [leased] = await lease;
    assert.equal(leased?.jobId, job.jobId);
    assert.equal(server.queue.waits.ended.woken, before.woken + 1, 'woken by the enqueue');
    assert.equal(server.queue.waits.ended.timeout, before.timeout, 'not by its timeout');
  });

  it('does not wake a parked call for a job of another kind', async () => {
    const waiting = parked(server.queue);
    const lease = client.lease({ workerId: 'w1', kinds: ['wanted'], waitMs: 300 });
    await waiting;
    await client.enqueue({ kind: 'other' }, acme);
    assert.deepEqual(await lease, []);
    assert.equal(server.queue.waits.ended.woken, 0);
  });

  it('leases several jobs in one call', async () => {
    await client.enqueueBatch([{ kind: 'k' }, { kind: 'k' }, { kind: 'k' }], acme);
    const jobs = await client.lease({ workerId: 'w1', limit: 10 });
    assert.equal(jobs.length, 3);
  });

  /**
   * A worker of concurrency 1 whose handlers wait for `gate`, recording the order they start in;
   * `first` settles when the first handler has started.
   */
  function gatedWorker(options: { prefetch?: number | 'auto'; heartbeatFraction?: number }) {
    const gate = deferred();
    const first = deferred();
    const started: string[] = [];
    const worker = new Worker({
      address: server.address,
      concurrency: 1,
      ...options,
      handler: async (ctx) => {
        if (started.push(ctx.jobId) === 1) first.resolve();
        await gate.promise;
      },
    }).start();
    return { worker, started, first: first.promise, open: () => gate.resolve() };
  }

  /** The `count` jobs of `kind` once the server has stored them in `state`. */
  const reach = (kind: string, state: JobState, count: number): Promise<unknown> =>
    written(
      server.queue,
      `${count} ${kind} jobs in state ${state}`,
      (r) => r.kind === kind && r.state === state,
      count,
    );

  const countOf = async (state: JobState): Promise<number> =>
    (await client.counts(acme)).filter((r) => r.state === state).reduce((n, r) => n + r.count, 0);

  /** Enqueue `n` jobs of `kind` in acme; their ids, in enqueue order. */
  const enqueueMany = async (n: number, kind: string): Promise<string[]> =>
    (
      await client.enqueueBatch(
        Array.from({ length: n }, () => ({ kind })),
        acme,
      )
    ).map((r) => r.job.jobId);

  it('prefetches jobs ahead of its slots, heartbeats them while they wait, and runs them in lease order', async () => {
    const ids = await enqueueMany(4, 'pre');
    const leased = reach('pre', JobState.Leased, 3);
    // A prefetched job's lease is kept alive like a running one's.
    const waitingId = ids[2] as string;
    const beat = written(server.queue, 'a heartbeat for a job waiting for its slot', (r) => {
      return r.jobId === waitingId && lastTransition(r) === 'extended';
    });
    const { worker, started, first, open } = gatedWorker({ prefetch: 2, heartbeatFraction: 0.001 });
    await Promise.all([leased, first]);
    assert.equal(await countOf(JobState.Pending), 1);
    assert.equal(worker.active, 1);
    assert.deepEqual(started, [ids[0]]);
    await beat;
    const completed = reach('pre', JobState.Completed, 4);
    open();
    await completed;
    assert.deepEqual(started, ids);
    await worker.close();
  });

  it("leases only for free slots while handlers are slow, with prefetch 'auto'", async () => {
    await enqueueMany(3, 'slow');
    const { worker, first, open } = gatedWorker({ prefetch: 'auto' });
    await first;
    // Give a wrongly granted credit the time of two round trips to show up as a lease.
    await client.counts(acme);
    assert.equal(await countOf(JobState.Leased), 1);
    assert.equal(await countOf(JobState.Pending), 2);
    const completed = reach('slow', JobState.Completed, 3);
    open();
    await completed;
    await worker.close();
  });

  it('works with a concurrency above the credit a session allows, granting no more than 10,000', async () => {
    await enqueueMany(3, 'wide');
    const completed = reach('wide', JobState.Completed, 3);
    const worker = new Worker({
      address: server.address,
      concurrency: 12_000,
      handler: () => Promise.resolve(),
    }).start();
    await completed;
    await worker.close();
  });

  it('hands back its prefetched jobs at close(), unstarted and uncharged, and finishes the running one', async () => {
    const ids = await enqueueMany(3, 'drain');
    const leased = reach('drain', JobState.Leased, 3);
    const { worker, started, first, open } = gatedWorker({ prefetch: 2 });
    await Promise.all([leased, first]);
    const closed = worker.close();
    open();
    await closed;
    assert.deepEqual(started, [ids[0]]);
    assert.equal((await client.show(ids[0] as string)).state, JobState.Completed);
    assert.deepEqual(worker.stats, { completed: 1, failed: 0, released: 2, leaseLost: 0 });
    for (const id of ids.slice(1)) {
      const job = await client.show(id);
      assert.equal(job.state, JobState.Pending);
      assert.equal(job.attempts, 0);
      assert.deepEqual(
        job.events.map((e) => e.transition),
        ['enqueued', 'leased', 'released'],
      );
    }
    // No reaper and no clock movement: the next worker gets them now.
    const next = await client.lease({ workerId: 'next', limit: 10 });
    assert.deepEqual(next.map((j) => j.jobId).sort(), ids.slice(1).sort());
  });

  it('strands nothing when closed right after start: what it was pushed goes back at once, unrun', async () => {
    const ids = await enqueueMany(50, 'email');
    const ran: string[] = [];
    // The README's pattern: start, then close on shutdown, here at once.
    const worker = new Worker({
      address: server.address,
      kinds: ['email'],
      concurrency: 20,
      handler: (ctx) => {
        ran.push(ctx.jobId);
        return Promise.resolve();
      },
    }).start();
    await worker.close();
    assert.deepEqual(ran, []);
    let pushed = 0;
    for (const id of ids) {
      const job = await client.show(id);
      assert.equal(job.state, JobState.Pending, `job ${id}`);
      assert.equal(job.attempts, 0);
      const transitions = job.events.map((e) => e.transition);
      if (transitions.includes('leased')) pushed++;
      assert.deepEqual(transitions, transitions.length === 1 ? ['enqueued'] : ['enqueued', 'leased', 'released']);
    }
    assert.ok(pushed > 0, 'the server leased jobs for the worker before it closed');
    // No reaper and no clock movement: the next worker gets every job now.
    assert.equal((await client.lease({ workerId: 'next', limit: 100 })).length, ids.length);
  });

  it('hands back the job of a handler that ignores its signal past the close timeout', async () => {
    const { job } = await client.enqueue({ kind: 'stuck' }, acme);
    const started = deferred();
    let aborted = false;
    const worker = new Worker({
      address: server.address,
      handler: async (ctx) => {
        ctx.signal.addEventListener('abort', () => (aborted = true), { once: true });
        started.resolve();
        // Never returns: close() must not wait for it.
        await new Promise(() => {});
      },
    }).start();
    await started.promise;
    await worker.close(100);
    assert.ok(aborted, 'the handler saw its signal abort');
    assert.equal(worker.stats.released, 1);
    const record = await client.show(job.jobId);
    assert.equal(record.state, JobState.Pending);
    assert.equal(record.attempts, 0);
    assert.equal(record.events.at(-1)?.transition, 'released');
    const [next] = await client.lease({ workerId: 'next' });
    assert.equal(next?.jobId, job.jobId);
  });

  it('aborts the handler signal when the lease is lost, and does not submit its result', async () => {
    await server.close();
    server = await startTestServer({ jobs: { lease_ttl_secs: 1, backoff_base_secs: 0 } });
    client = new TelhaClient({ address: server.address });
    const { job } = await client.enqueue({ kind: 'slow' }, acme);
    const lost = deferred<LeaseConflictError>();
    const started = deferred();
    const worker = new Worker({
      address: server.address,
      // No free slot while the handler runs, so the reaped job is not pushed straight back.
      concurrency: 1,
      prefetch: 0,
      heartbeatFraction: 0.999, // beat only at the very end of the lease
      onLeaseLost: (_id, error) => lost.resolve(error),
      handler: async (ctx) => {
        started.resolve();
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      },
    }).start();
    await started.promise;
    // Take the lease away: reap it as if it expired, and hand it to someone else (past its backoff too).
    server.clock.advance(3_600_000_000);
    await server.queue.maintenance.reapExpired();
    const thief = await server.queue.leaseNext({ workerId: 'thief', scope: acme });
    assert.equal(thief?.jobId, job.jobId);
    const error = await lost.promise;
    await worker.close();
    assert.equal(error.reason, 'worker_mismatch');
    const record = await client.show(job.jobId);
    assert.equal(record.state, JobState.Leased);
    assert.equal(record.workerId, 'thief');
  });

  it("aborts a cancelled job's handler signal with reason cancelled, and neither completes nor fails it", async () => {
    const { job } = await client.enqueue({ kind: 'long' }, acme);
    const started = deferred();
    const aborted = deferred<unknown>();
    const worker = new Worker({
      address: server.address,
      concurrency: 1,
      prefetch: 0,
      heartbeatFraction: 0.001, // beat as often as allowed: the worker learns of the cancel at its next one
      handler: async (ctx) => {
        ctx.signal.addEventListener('abort', () => aborted.resolve(ctx.signal.reason), { once: true });
        started.resolve();
        await aborted.promise;
        // Returning normally: the worker must still not submit a completion.
      },
    }).start();
    await started.promise;
    const cancelled = await client.cancel(job.jobId, { reason: 'no longer needed' });
    const reason = await aborted.promise;
    await worker.close();
    assert.ok(reason instanceof LeaseConflictError, String(reason));
    assert.equal(reason.reason, 'cancelled');
    assert.equal(reason.jobId, job.jobId);
    assert.deepEqual(worker.stats, { completed: 0, failed: 0, released: 0, leaseLost: 1 });
    assert.deepEqual(await client.show(job.jobId), cancelled);
  });
});

describe('batch settlement', () => {
  let server: TestServer;
  let client: TelhaClient;
  /** Two jobs leased to `w1`. */
  let a: RemoteJob;
  let b: RemoteJob;

  beforeEach(async () => {
    server = await startTestServer();
    client = new TelhaClient({ address: server.address });
    await client.enqueueBatch([{ kind: 'k' }, { kind: 'k' }], tenantScope('acme'));
    const leased = await client.lease({ workerId: 'w1', limit: 2 });
    assert.equal(leased.length, 2);
    [a, b] = leased as [RemoteJob, RemoteJob];
  });
  afterEach(async () => {
    await server.close();
  });

  it('settles each item of a CompleteEach on its own: accepted, stale, unknown', async () => {
    const outcomes = await client.completeEach([
      { jobId: a.jobId, fence: { workerId: 'w1', leaseGeneration: a.leaseGeneration } },
      { jobId: b.jobId, fence: { workerId: 'intruder', leaseGeneration: b.leaseGeneration } },
      { jobId: '01890a5d-ac96-774b-bcce-b302099a8057', fence: { workerId: 'w1', leaseGeneration: 1 } },
    ]);
    assert.deepEqual(outcomes[0], { ok: true, value: null });
    const [, stale, unknown] = outcomes.map((o) => (o.ok ? null : o.error));
    assert.ok(stale instanceof LeaseConflictError);
    assert.equal(stale.reason, 'worker_mismatch');
    assert.equal(stale.jobId, b.jobId);
    assert.ok(unknown instanceof Error);
    assert.equal((await client.show(a.jobId)).state, JobState.Completed);
    assert.equal((await client.show(b.jobId)).state, JobState.Leased);
    const failed = await client.failEach([
      { jobId: b.jobId, fence: { workerId: 'w1', leaseGeneration: b.leaseGeneration }, error: 'x', permanent: true },
    ]);
    assert.deepEqual(failed, [{ ok: true, value: null }]);
    assert.equal((await client.show(b.jobId)).state, JobState.Dead);
  });

  it('hands jobs back one at a time or many in one call, each answered on its own', async () => {
    const released = await client.release(a.jobId, { workerId: 'w1', leaseGeneration: a.leaseGeneration });
    assert.equal(released.state, JobState.Pending);
    assert.equal(released.events.at(-1)?.transition, 'released');
    const outcomes = await client.releaseEach([
      { jobId: a.jobId, fence: { workerId: 'w1', leaseGeneration: a.leaseGeneration } },
      { jobId: b.jobId, fence: { workerId: 'w1', leaseGeneration: b.leaseGeneration } },
    ]);
    assert.ok(outcomes[0] !== undefined && !outcomes[0].ok && outcomes[0].error instanceof LeaseConflictError);
    assert.deepEqual(outcomes[1], { ok: true, value: null });
    assert.equal((await client.lease({ workerId: 'w2', limit: 2 })).length, 2);
  });
});

describe('system jobs', () => {
  it("never reach a worker that did not ask for system kinds; the server's maintenance runs them", async () => {
    const server = await startTestServer({ retention: { completed_secs: 60 } });
    try {
      const client = new TelhaClient({ address: server.address });
      // A due prune job, first in lease order, and a tenant job behind it.
      const prune = (await server.queue.enqueue({ kind: PRUNE_KIND, priority: 0 }, SYSTEM_SCOPE)).job;
      await client.enqueue({ kind: 'email', priority: 255 }, acme);
      const seen: string[] = [];
      const completed = deferred();
      // Every kind, every scope: the catch-all worker.
      const worker = new Worker({
        address: server.address,
        onCompleted: () => completed.resolve(),
        handler: (ctx) => {
          seen.push(ctx.kind);
          return Promise.resolve();
        },
      }).start();
      await completed.promise;
      await worker.close();
      assert.deepEqual(seen, ['email']);
      const waiting = await client.show(prune.jobId);
      assert.equal(waiting.state, JobState.Pending);
      assert.deepEqual(
        waiting.events.map((e) => e.transition),
        ['enqueued'],
      );
      await server.queue.maintenance.runSystemJobs();
      const ran = await client.show(prune.jobId);
      assert.equal(ran.state, JobState.Completed);
      assert.equal(
        ran.events.find((e) => e.transition === 'leased')?.detail,
        `worker=${MAINTENANCE_WORKER_ID} generation=1`,
      );
    } finally {
      await server.close();
    }
  });
});
