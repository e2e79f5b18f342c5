/**
 * LocalWorker: the SDK's worker loop on a queue in the same process. The
 * loop itself is the one the gRPC Worker runs (tested over real sockets in
 * test/server/); here, what the in-process source must get right: every job
 * run once and settled with its fence, failures and dead-letters, chained
 * successors, the scope it leases from, a lost lease, and close().
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { OffsetClock } from '../../src/core/clock.ts';
import { makeConfig } from '../../src/core/config.ts';
import type { LeaseConflictError } from '../../src/core/errors.ts';
import { JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { openQueue } from '../../src/open.ts';
import type { Queue } from '../../src/engine/queue.ts';
import { LocalWorker, type LocalWorkerOptions } from '../../src/engine/worker.ts';
import { PermanentError } from '../../src/worker/runner.ts';
import { tempDir } from '../support/backends.ts';
import { written } from '../support/events.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

for (const backend of ['memory', 'rocksdb'] as const) {
  describe(`LocalWorker on ${backend}`, () => {
    let queue: Queue;
    const clock = new OffsetClock();
    let dir: string | null = null;
    const workers: LocalWorker[] = [];
    const start = (options: LocalWorkerOptions): LocalWorker => {
      const worker = new LocalWorker(queue, options).start();
      workers.push(worker);
      return worker;
    };
    const states = async (scope = acme): Promise<JobState[]> =>
      (await queue.list({ scope, limit: 1000 })).jobs.map((j) => j.state);

    beforeEach(async () => {
      dir = backend === 'rocksdb' ? tempDir() : null;
      const config = makeConfig({
        ...(dir === null ? {} : { storage: { path: dir } }),
        jobs: { backoff_base_secs: 60 },
        retention: { enabled: false },
      });
      queue = await openQueue({ config, clock, services: false, ...(dir === null ? { inMemory: true } : {}) });
    });
    afterEach(async () => {
      await Promise.all(workers.splice(0).map((w) => w.close(1_000)));
      await queue.close();
      if (dir !== null) rmSync(dir, { recursive: true, force: true });
    });

    it('is ready as soon as it starts: nothing stands between it and the queue', async () => {
      const worker = start({ handler: async () => {} });
      await worker.waitForReady({ timeoutMs: 60_000 });
    });

    it('runs every job once, with its payload and fence, and completes it', async () => {
      await queue.enqueueBatch(
        Array.from({ length: 40 }, (_, i) => ({ kind: 'email', payload: Buffer.from(`m${i}`) })),
        acme,
      );
      const seen: JobRecord[] = [];
      const completed = deferred();
      let count = 0;
      const worker = start({
        workerId: 'local-1',
        concurrency: 4,
        onCompleted: () => ++count === 40 && completed.resolve(),
        handler: (job) => {
          seen.push(job.record);
          return Promise.resolve();
        },
      });
      await completed.promise;
      assert.ok((await states()).every((s) => s === JobState.Completed));
      assert.equal(worker.stats.completed, 40);
      assert.equal(new Set(seen.map((j) => j.jobId)).size, 40);
      assert.deepEqual(
        new Set(seen.map((j) => Buffer.from(j.payload).toString())),
        new Set(Array.from({ length: 40 }, (_, i) => `m${i}`)),
      );
      for (const job of seen) {
        assert.equal(job.workerId, 'local-1');
        const record = await queue.show(job.jobId);
        assert.deepEqual(
          record.events.map((e) => e.transition),
          ['enqueued', 'leased', 'completed'],
        );
      }
    });

    it('retries a throwing handler with backoff and dead-letters a PermanentError', async () => {
      const retried = (await queue.enqueue({ kind: 'flaky' }, acme)).job.jobId;
      const doomed = (await queue.enqueue({ kind: 'doomed' }, acme)).job.jobId;
      const dead = written(queue, 'doomed is dead', (r) => r.jobId === doomed && r.state === JobState.Dead);
      const failedOnce = written(queue, 'flaky failed once', (r) => r.jobId === retried && r.attempts === 1);
      start({
        handler: (job) => Promise.reject(job.kind === 'doomed' ? new PermanentError('bad input') : new Error('later')),
      });
      await Promise.all([dead, failedOnce]);
      const flaky = await queue.show(retried);
      assert.equal(flaky.state, JobState.Pending);
      assert.ok((flaky.notBefore ?? 0) > Date.now() * 1000, 'gated by its backoff');
    });

    it('enqueues chained successors in the completed job’s scope', async () => {
      await queue.enqueue({ kind: 'parent' }, acme);
      const chained = written(queue, 'the child', (r) => r.kind === 'child');
      start({
        kinds: ['parent'],
        handler: (job) => {
          job.chain({ kind: 'child', payload: 'from parent' });
          return Promise.resolve();
        },
      });
      await chained;
      const [child] = (await queue.list({ scope: acme, kindPrefix: 'child' })).jobs;
      assert.equal(Buffer.from(child?.payload ?? []).toString(), 'from parent');
      assert.equal(child?.state, JobState.Pending);
    });

    it('leases only from its scope', async () => {
      await queue.enqueue({ kind: 'theirs' }, globex);
      const mine = (await queue.enqueue({ kind: 'mine' }, acme)).job.jobId;
      const ran: string[] = [];
      const done = written(queue, 'own job done', (r) => r.jobId === mine && r.state === JobState.Completed);
      start({
        scope: acme,
        handler: (job) => {
          ran.push(job.jobId);
          return Promise.resolve();
        },
      });
      await done;
      assert.deepEqual(ran, [mine]);
      assert.deepEqual(await states(globex), [JobState.Pending]);
    });

    it('aborts the handler when its lease is lost and does not submit the result', async () => {
      const { job } = await queue.enqueue({ kind: 'slow' }, acme);
      const started = deferred();
      const lost = deferred<LeaseConflictError>();
      start({
        workerId: 'loser',
        // No free slot while the handler runs, so the reaped job is not handed straight back.
        concurrency: 1,
        prefetch: 0,
        heartbeatFraction: 0.001,
        onLeaseLost: (_id, error) => lost.resolve(error),
        handler: async (ctx) => {
          started.resolve();
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        },
      });
      await started.promise;
      clock.advance(3_600_000_000);
      await queue.maintenance.reapExpired();
      // Past the reaped job's backoff gate too.
      clock.advance(7_200_000_000);
      const thief = await queue.leaseNext({ workerId: 'thief', scope: acme });
      assert.equal(thief?.jobId, job.jobId);
      assert.equal((await lost.promise).reason, 'worker_mismatch');
      const record = await queue.show(job.jobId);
      assert.equal(record.state, JobState.Leased);
      assert.equal(record.workerId, 'thief');
    });

    it('hands its prefetched jobs back to the queue at close(), for the next worker at once', async () => {
      const ids = (await queue.enqueueBatch([{ kind: 'k' }, { kind: 'k' }, { kind: 'k' }], acme)).map(
        (r) => r.job.jobId,
      );
      const started: string[] = [];
      const gate = deferred();
      const first = deferred();
      const worker = start({
        concurrency: 1,
        prefetch: 2,
        handler: async (job) => {
          if (started.push(job.jobId) === 1) first.resolve();
          await gate.promise;
        },
      });
      await Promise.all([
        written(queue, 'one running and two prefetched jobs', (r) => r.state === JobState.Leased, 3),
        first.promise,
      ]);
      const closed = worker.close();
      gate.resolve();
      await closed;
      assert.deepEqual(started, [ids[0]]);
      assert.equal(worker.stats.released, 2);
      for (const id of ids.slice(1)) {
        const job = await queue.show(id);
        assert.equal(job.state, JobState.Pending);
        assert.equal(job.attempts, 0);
        assert.equal(job.events.at(-1)?.transition, 'released');
      }
      const next = await queue.lease({ workerId: 'next', scope: acme, limit: 10 });
      assert.deepEqual(next.map((j) => j.jobId).sort(), ids.slice(1).sort());
    });

    it('waits in close() for its running job, leaving the queue open', async () => {
      await queue.enqueue({ kind: 'k' }, acme);
      const started = deferred();
      const release = deferred();
      const worker = start({
        handler: async () => {
          started.resolve();
          await release.promise;
        },
      });
      await started.promise;
      const closed = worker.close();
      release.resolve();
      await closed;
      assert.deepEqual(await states(), [JobState.Completed]);
      await queue.enqueue({ kind: 'after' }, acme);
    });
  });
}
