/**
 * The worker loop's close() against a scripted source, where the test decides
 * when jobs arrive and when the session ends: what it hands back (released,
 * not run), on which path, and what it never submits. The same loop runs over
 * gRPC and in process (test/server/sdk.test.ts, test/engine/local-worker.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../src/core/clock.ts';
import { makeConfig } from '../../src/core/config.ts';
import { ErrorCode, LeaseConflictError, TelhaError } from '../../src/core/errors.ts';
import type { Logger } from '../../src/core/logger.ts';
import * as transitions from '../../src/core/transitions.ts';
import type { JobRecord } from '../../src/core/types.ts';
import { AttemptTimeoutError, WorkerRunner, type RunnerOptions } from '../../src/worker/runner.ts';
import type { SettleItem, WorkSession, WorkSessionEvents, WorkSource } from '../../src/worker/source.ts';

const NOW = Date.now() * 1000;
const policy: transitions.RetryPolicy = { config: makeConfig({}).jobs };
let count = 0;

/** A job leased to `workerId`, as a source would push it. */
function leasedJob(workerId: string): JobRecord {
  const jobId = `01a22b9c-0b3f-75cf-b38e-${String(++count).padStart(12, '0')}`;
  const fields = { jobId, tenant: 'acme', kind: 'k', payload: Buffer.alloc(0), priority: 128 };
  const pending = transitions.enqueue(
    { ...fields, createdAt: NOW, notBefore: null, idempotencyKey: null, maxAttempts: null, timeoutSecs: null },
    NOW,
  );
  return transitions.lease(pending, workerId, NOW, policy);
}

/** A source whose single session the test drives; every call lands in `log`, in order. */
function scriptedSource() {
  const log: string[] = [];
  let events: WorkSessionEvents | null = null;
  let ended = false;
  const record = (where: string, item: SettleItem): Promise<void> => {
    log.push(`${where} ${item.type} ${item.jobId}`);
    return Promise.resolve();
  };
  const session: WorkSession = {
    get writable() {
      return !ended;
    },
    grant: () => {},
    settle: (item) => record('session', item),
    end: () => {
      ended = true;
      log.push('end');
    },
    cancel: () => log.push('cancel'),
  };
  const source: WorkSource = {
    name: 'a test source',
    open: (_params, opened) => {
      events = opened;
      return session;
    },
    heartbeat: () => Promise.resolve(NOW + 30_000_000),
    checkpoint: () => Promise.resolve(NOW + 30_000_000),
    settle: (item) => record('source', item),
    close: () => log.push('close'),
  };
  /** What the other end of the session does: push jobs, end it. */
  const remote = {
    push: (jobs: JobRecord[]) => (events as WorkSessionEvents).onJobs(jobs),
    end: () => (events as WorkSessionEvents).onEnd(null),
  };
  return { source, log, remote };
}

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

function runner(source: WorkSource, options: Omit<RunnerOptions, 'workerId'>): WorkerRunner {
  return new WorkerRunner(source, { workerId: 'w1', heartbeatFraction: 0.999, ...options }).start();
}

describe('the worker loop at close()', () => {
  it('releases its prefetched jobs on the session before ending it, and runs none of them', async () => {
    const { source, log, remote } = scriptedSource();
    const gate = deferred();
    const ran: string[] = [];
    const worker = runner(source, {
      concurrency: 1,
      prefetch: 2,
      handler: async (ctx) => {
        ran.push(ctx.jobId);
        await gate.promise;
      },
    });
    const [running, second, third] = [leasedJob('w1'), leasedJob('w1'), leasedJob('w1')];
    remote.push([running, second, third]);
    const closed = worker.close();
    assert.deepEqual(log, [`session release ${second.jobId}`, `session release ${third.jobId}`, 'end']);
    gate.resolve();
    remote.end();
    await closed;
    assert.deepEqual(ran, [running.jobId]);
    assert.deepEqual(log.slice(3), [`source complete ${running.jobId}`, 'close']);
    assert.deepEqual(worker.stats, { completed: 1, failed: 0, released: 2, leaseLost: 0 });
  });

  it('releases jobs pushed after close began, without running them, before close() resolves', async () => {
    const { source, log, remote } = scriptedSource();
    const ran: string[] = [];
    const worker = runner(source, {
      handler: (ctx) => {
        ran.push(ctx.jobId);
        return Promise.resolve();
      },
    });
    const closed = worker.close();
    // A lease that was on its way when the worker half-closed.
    const late = leasedJob('w1');
    remote.push([late]);
    remote.end();
    await closed;
    assert.deepEqual(ran, []);
    assert.deepEqual(log, ['end', `source release ${late.jobId}`, 'close']);
  });

  it('gives up on a handler that outlives the close timeout: aborts it, releases its job, drops its late result', async () => {
    const { source, log, remote } = scriptedSource();
    const gate = deferred();
    const returned = deferred();
    let reason: unknown = null;
    const worker = runner(source, {
      handler: async (ctx) => {
        ctx.signal.addEventListener(
          'abort',
          () => {
            reason = ctx.signal.reason;
          },
          { once: true },
        );
        await gate.promise; // ignores its signal
        returned.resolve();
      },
    });
    const job = leasedJob('w1');
    remote.push([job]);
    const closed = worker.close(20);
    remote.end();
    await closed;
    assert.match(String(reason), /worker shutting down/);
    assert.deepEqual(log, ['end', `source release ${job.jobId}`, 'close']);
    gate.resolve();
    await returned.promise;
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(log, ['end', `source release ${job.jobId}`, 'close'], 'the late result is not submitted');
    assert.deepEqual(worker.stats, { completed: 0, failed: 0, released: 1, leaseLost: 0 });
  });
});

describe('the worker loop and its clock', () => {
  it("holds a job's attempt deadline against its own clock: past it, the handler is stopped at once", async () => {
    const { source, log, remote } = scriptedSource();
    const hour = 3_600_000_000;
    // The server gave the attempt an hour; the worker's clock reads two hours on.
    const clock = new ManualClock(NOW + 2 * hour);
    const stopped = deferred<unknown>();
    const worker = runner(source, {
      clock,
      handler: (ctx) =>
        new Promise((_resolve, reject) =>
          ctx.signal.addEventListener(
            'abort',
            () => {
              stopped.resolve(ctx.signal.reason);
              reject(ctx.signal.reason as Error);
            },
            { once: true },
          ),
        ),
    });
    const job = { ...leasedJob('w1'), attemptDeadline: NOW + hour };
    remote.push([job]);
    assert.ok((await stopped.promise) instanceof AttemptTimeoutError);
    const closed = worker.close();
    remote.end();
    await closed;
    assert.ok(
      !log.some((line) => line.includes(`complete ${job.jobId}`)),
      'nothing is submitted for a timed-out attempt',
    );
  });
});

describe('heartbeats', () => {
  it('stop once the handler returns, even when a heartbeat out at the time fails as if the server were away', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { source, log, remote } = scriptedSource();
    const beating = deferred();
    const answer = deferred<number>();
    let beats = 0;
    const worker = runner(
      {
        ...source,
        heartbeat: () => {
          beats++;
          beating.resolve();
          return answer.promise;
        },
      },
      {
        clock: new ManualClock(NOW),
        // Returns while its job's heartbeat is still out.
        handler: () => beating.promise,
      },
    );
    // A lease at its deadline already: the first heartbeat goes after the shortest interval.
    const job = { ...leasedJob('w1'), leaseDeadline: NOW };
    remote.push([job]);
    t.mock.timers.tick(1_000);
    await beating.promise;
    const closed = worker.close();
    remote.end();
    await closed;
    assert.deepEqual(log, ['end', `source complete ${job.jobId}`, 'close']);
    // The server went away: the heartbeat that was out fails as a transient error would.
    answer.resolve(Promise.reject(new TelhaError(ErrorCode.Unavailable, 'read ECONNRESET')) as never);
    await new Promise((resolve) => setImmediate(resolve));
    // Before, it beat again every 50 ms, for ever, keeping the closed worker's process alive.
    t.mock.timers.tick(3_600_000);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(beats, 1);
    assert.deepEqual(worker.stats, { completed: 1, failed: 0, released: 0, leaseLost: 0 });
  });
});

describe('the job a handler gets', () => {
  it('carries its id as jobId, the name records and events use, and as the deprecated id', async () => {
    const { source, remote } = scriptedSource();
    const seen = deferred<{ jobId: string; id: string; recordId: string }>();
    const worker = runner(source, {
      concurrency: 1,
      handler: (job) => {
        seen.resolve({ jobId: job.jobId, id: job.id, recordId: job.record.jobId });
        return Promise.resolve();
      },
    });
    const leased = leasedJob('w1');
    remote.push([leased]);
    const { jobId, id, recordId } = await seen.promise;
    assert.equal(jobId, leased.jobId);
    assert.equal(recordId, jobId);
    assert.equal(id, jobId);
    remote.end();
    await worker.close();
  });
});

describe('a worker whose token the server refuses', () => {
  it('says the token was refused, and waits at least 15 s before asking again', async () => {
    const lines: { level: string; fields: { retryInMs?: number }; message: string }[] = [];
    const refusedOnce = deferred();
    const logger: Logger = {
      debug: (fields, message) => {
        lines.push({ level: 'debug', fields, message });
        refusedOnce.resolve();
      },
      info: (fields, message) => lines.push({ level: 'info', fields, message }),
      warn: (fields, message) => lines.push({ level: 'warn', fields, message }),
      error: (fields, message) => lines.push({ level: 'error', fields, message }),
    };
    const source: WorkSource = {
      ...scriptedSource().source,
      name: 'the Telha server at 127.0.0.1:7070',
      open: (_params, opened) => {
        queueMicrotask(() => opened.onEnd(new TelhaError(ErrorCode.Unauthenticated, 'unknown token')));
        return { writable: false, grant: () => {}, settle: () => Promise.resolve(), end: () => {}, cancel: () => {} };
      },
    };
    const worker = runner(source, { concurrency: 1, logger, handler: () => Promise.resolve() });
    await refusedOnce.promise;
    await worker.close();
    const retry = lines.find((line) => line.level === 'debug');
    assert.ok((retry?.fields.retryInMs ?? 0) >= 15_000, JSON.stringify(retry));
    assert.deepEqual(
      lines.filter((line) => line.level !== 'debug').map((line) => `${line.level}: ${line.message}`),
      [
        "error: the Telha server at 127.0.0.1:7070 refused this worker's token (unauthenticated): check its token; retrying every 30 s",
      ],
    );
  });
});

describe('a job the handler completes in its own transaction', () => {
  it('sends no result of its own, counts it completed, and takes a heartbeat refused after the commit as no lost lease', async () => {
    const { source, log, remote } = scriptedSource();
    const beating = deferred();
    const answer = deferred<number>();
    let beats = 0;
    const clock = new ManualClock(NOW);
    const completed: string[] = [];
    let fence: unknown = null;
    const worker = new WorkerRunner(
      {
        ...source,
        heartbeat: () => {
          beats++;
          beating.resolve();
          return answer.promise;
        },
      },
      {
        workerId: 'w1',
        clock,
        handler: async (ctx) => {
          fence = ctx.fence;
          // A heartbeat is on its way as the application's transaction commits the completion.
          await beating.promise;
          ctx.completedInTransaction();
          assert.throws(() => ctx.chain({ kind: 'next' }), TypeError);
          return 'not stored';
        },
      },
    ).start();
    worker.on('completed', (job) => completed.push(job.jobId));
    // A lease at its deadline already: the first heartbeat goes after the shortest interval.
    const job = { ...leasedJob('w1'), leaseDeadline: NOW };
    remote.push([job]);
    await beating.promise;
    answer.resolve(Promise.reject(new LeaseConflictError(job.jobId, 'worker_mismatch', 'completed')) as never);
    const closed = worker.close();
    remote.end();
    await closed;
    assert.deepEqual(fence, { workerId: 'w1', leaseGeneration: job.leaseGeneration });
    assert.deepEqual(log, ['end', 'close'], 'neither a completion nor a failure is sent');
    assert.deepEqual(completed, [job.jobId]);
    assert.deepEqual(worker.stats, { completed: 1, failed: 0, released: 0, leaseLost: 0 });
    assert.equal(beats, 1);
  });

  it('refuses completedInTransaction after chain, whose successors only a completion it sends could carry', async () => {
    const { source, log, remote } = scriptedSource();
    const worker = runner(source, {
      handler: (ctx) => {
        ctx.chain({ kind: 'next' });
        ctx.completedInTransaction();
        return Promise.resolve();
      },
    });
    const job = leasedJob('w1');
    remote.push([job]);
    const closed = worker.close();
    remote.end();
    await closed;
    assert.deepEqual(log, ['end', `source fail ${job.jobId}`, 'close']);
    assert.deepEqual(worker.stats, { completed: 0, failed: 1, released: 0, leaseLost: 0 });
  });
});
