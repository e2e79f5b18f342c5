/**
 * Watch: every committed transition, in order, to the watchers allowed to see
 * it; resumable with a token; bounded for a watcher that stops reading; and
 * `client.result` built on it.
 */
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return --
   the interop part builds its client from the .proto file at run time: untyped by design. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { TelhaClient } from '../../src/client/client.ts';
import { JobFailedError, type WatchEvent } from '../../src/client/watch.ts';
import { PermanentError, Worker } from '../../src/client/worker.ts';
import { ErrorCode, type TelhaError } from '../../src/core/errors.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { JobState, tenantScope, type JobRecord, type NewJob } from '../../src/core/types.ts';
import { rmSync } from 'node:fs';
import { create, fromBinary } from '@bufbuild/protobuf';
import { WatchRequestSchema, WatchResponseSchema } from '../../src/gen/telha/v1/queue_pb.ts';
import { Authenticator } from '../../src/edge/auth.ts';
import { createQueueService } from '../../src/server/service.ts';
import { tempDir } from '../support/backends.ts';
import { queueServiceFromProto } from '../support/proto-client.ts';
import { freePort, liveServer, startTestServer, type TestServer } from '../support/server.ts';

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const acme = tenantScope('acme');
const globex = tenantScope('globex');
const TOKENS = {
  acme: 'acme-token-0123456789',
  globex: 'globex-token-0123456789',
  worker: 'worker-token-0123456789',
  operator: 'operator-token-0123456789',
};

/**
 * The drain: 10,000 jobs, every one enqueued, leased and completed by an SDK Worker. About 6 s
 * on a loaded 2-core machine.
 */
const DRAIN_JOBS = 10_000;

/** Open a watch and resolve once the server has opened it; the events arrive in `seen`. */
async function watching(
  client: TelhaClient,
  options: Parameters<TelhaClient['watch']>[0] & { until: (seen: WatchEvent[]) => boolean },
): Promise<{ opened: string; done: Promise<WatchEvent[]> }> {
  const opened = deferred<string>();
  const { until, ...watch } = options;
  const done = (async () => {
    const seen: WatchEvent[] = [];
    for await (const event of client.watch({ ...watch, onOpen: (token) => opened.resolve(token) })) {
      seen.push(event);
      if (until(seen)) break;
    }
    return seen;
  })();
  done.catch(() => undefined);
  return { opened: await Promise.race([opened.promise, done.then(() => 'ended')]), done };
}

function jobsOf(count: number, kind: string): NewJob[] {
  return Array.from({ length: count }, (_, i) => ({ kind, payload: String(i) }));
}

describe('Watch', () => {
  const { server, client } = liveServer({ server: { http_address: '' } });

  it('delivers every transition of a 10,000-job drain once, in order, and resumes mid-drain with exactly the rest', async () => {
    let completed = 0;
    const completedAll = (seen: WatchEvent[]): boolean =>
      (completed += seen[seen.length - 1]?.transition === 'completed' ? 1 : 0) === DRAIN_JOBS;
    const whole = await watching(client, { kindPrefix: 'drain', until: completedAll });
    // A second watcher drops its stream a third of the way in, then resumes from its last event.
    const first = await watching(client, { kindPrefix: 'drain', until: (seen) => seen.length === DRAIN_JOBS });

    const worker = new Worker({
      address: server.address,
      kinds: ['drain'],
      concurrency: 64,
      logger: silentLogger,
      handler: () => Promise.resolve(),
    }).start();
    for (let i = 0; i < DRAIN_JOBS; i += 1_000) await client.enqueueBatch(jobsOf(1_000, 'drain'), acme);

    const head = await first.done;
    const resumed = await watching(client, {
      kindPrefix: 'drain',
      resumeToken: (head[head.length - 1] as WatchEvent).resumeToken,
      until: (seen) => head.length + seen.length === 3 * DRAIN_JOBS,
    });
    const events = await whole.done;
    const rest = await resumed.done;
    await worker.close();

    assert.equal(events.length, 3 * DRAIN_JOBS);
    const sequences = events.map((e) => e.sequence);
    assert.ok(
      sequences.every((s, i) => i === 0 || s > (sequences[i - 1] as number)),
      'sequence numbers increase',
    );
    const byJob = new Map<string, string[]>();
    for (const event of events) byJob.set(event.job.jobId, [...(byJob.get(event.job.jobId) ?? []), event.transition]);
    assert.equal(byJob.size, DRAIN_JOBS);
    for (const transitions of byJob.values()) assert.deepEqual(transitions, ['enqueued', 'leased', 'completed']);
    // The dropped and resumed watcher saw the same events as the one that never dropped: none missing, none twice.
    assert.deepEqual(
      [...head, ...rest].map((e) => `${e.sequence} ${e.job.jobId} ${e.transition}`),
      events.map((e) => `${e.sequence} ${e.job.jobId} ${e.transition}`),
    );
  });

  it('refuses a resume token from another store, or not a token at all, with INVALID_ARGUMENT naming resume_token', async () => {
    const other = await startTestServer({ server: { http_address: '' } });
    const otherClient = new TelhaClient({ address: other.address });
    try {
      const stop = new AbortController();
      const { opened, done } = await watching(client, { until: () => true, signal: stop.signal });
      stop.abort();
      await done;
      for (const [token, message] of [
        [opened, /resume_token: a resume token from another store/],
        ['0123abcd:42', /resume_token: not a resume token this server made/],
      ] as const) {
        await assert.rejects(otherClient.watch({ resumeToken: token }).next(), (error: TelhaError) => {
          assert.equal(error.code, ErrorCode.InvalidArgument);
          assert.match(error.message, message);
          return true;
        });
      }
    } finally {
      otherClient.close();
      await other.close();
    }
  });

  it('delivers every transition of a 10,000-job drain once across a server restart, resuming where it stopped', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const dir = tempDir('telha-restart-');
    let first: TestServer | null = await startTestServer({ server: { address, http_address: '' } }, { dir });
    let second: TestServer | null = null;
    const watcher = new TelhaClient({ address });
    try {
      // The watcher stops reading a third of the way in, and reads on only once the server has restarted.
      const gate = deferred();
      const stalled = deferred();
      const opened = deferred();
      const seen: WatchEvent[] = [];
      const watch = (async () => {
        for await (const event of watcher.watch({ kindPrefix: 'drain', onOpen: () => opened.resolve() })) {
          seen.push(event);
          if (seen.length === DRAIN_JOBS) {
            stalled.resolve();
            await gate.promise;
          }
          if (seen.length === 3 * DRAIN_JOBS) return;
        }
      })();
      watch.catch(() => undefined);
      await opened.promise;
      let completed = 0;
      const allCompleted = deferred();
      first.queue.events.on('transition', ({ transition, records }) => {
        if (transition === 'complete' && (completed += records.length) === DRAIN_JOBS) allCompleted.resolve();
      });
      const worker = new Worker({
        address,
        kinds: ['drain'],
        concurrency: 64,
        logger: silentLogger,
        handler: () => Promise.resolve(),
      }).start();
      for (let i = 0; i < DRAIN_JOBS; i += 1_000) await watcher.enqueueBatch(jobsOf(1_000, 'drain'), acme);
      await allCompleted.promise;
      await worker.close();
      await stalled.promise;
      await first.close();
      first = null;
      second = await startTestServer({ server: { address, http_address: '' } }, { dir });
      gate.resolve();
      await watch;
      assert.equal(seen.length, 3 * DRAIN_JOBS);
      const byJob = new Map<string, string[]>();
      for (const event of seen) byJob.set(event.job.jobId, [...(byJob.get(event.job.jobId) ?? []), event.transition]);
      assert.equal(byJob.size, DRAIN_JOBS);
      for (const transitions of byJob.values()) assert.deepEqual(transitions, ['enqueued', 'leased', 'completed']);
      const sequences = seen.map((e) => e.sequence);
      assert.ok(
        sequences.every((n, i) => i === 0 || n > (sequences[i - 1] as number)),
        'sequence numbers increase',
      );
    } finally {
      watcher.close();
      await first?.close();
      await second?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('resolves client.result with what the handler returned, rejects for a dead job and on timeout', async () => {
    const worker = new Worker({
      address: server.address,
      kinds: ['result:'],
      logger: silentLogger,
      handler: async (ctx) => {
        await Promise.resolve();
        if (ctx.kind === 'result:boom') throw new PermanentError('the ledger is closed');
        if (ctx.kind === 'result:big') return { text: 'x'.repeat(5_000) };
        return { sum: Number(Buffer.from(ctx.payload).toString()) + 1 };
      },
    });
    const { job: ok } = await client.enqueue({ kind: 'result:add', payload: '41' }, acme);
    const { job: boom } = await client.enqueue({ kind: 'result:boom' }, acme);
    const { job: big } = await client.enqueue({ kind: 'result:big' }, acme);
    const awaiting = client.result(ok.jobId, { timeoutMs: 30_000 });
    const failing = client.result(boom.jobId, { timeoutMs: 30_000 });
    // Over the 1 KiB an event carries: the completion's event has none, and result reads the job.
    const awaitingBig = client.result(big.jobId, { timeoutMs: 30_000 });
    // Started only now: the results are awaited before the jobs can finish.
    worker.start();
    try {
      const outcome = await awaiting;
      assert.deepEqual(outcome.json(), { sum: 42 });
      assert.equal(outcome.job.state, JobState.Completed);
      await assert.rejects(failing, (error: JobFailedError) => {
        assert.ok(error instanceof JobFailedError);
        assert.equal(error.job.state, JobState.Dead);
        assert.match(error.message, /is dead: .*the ledger is closed/);
        return true;
      });
      assert.deepEqual(
        (await awaitingBig).json(),
        { text: 'x'.repeat(5_000) },
        'a result too big for the feed is read with show',
      );
      // Already completed: read at once.
      assert.deepEqual((await client.result(ok.jobId)).json(), { sum: 42 });
    } finally {
      await worker.close();
    }
    const { job: idle } = await client.enqueue({ kind: 'nobody-works-this' }, acme);
    await assert.rejects(client.result(idle.jobId, { timeoutMs: 50 }), /has no outcome after 50 ms/);
  });

  it('calls onCompleted and onDead listeners until unsubscribed', async () => {
    const completed = deferred<WatchEvent>();
    const dead = deferred<WatchEvent>();
    const opened = deferred();
    const stopCompleted = client.onCompleted((event) => completed.resolve(event), {
      kindPrefix: 'listen',
      onOpen: () => opened.resolve(),
    });
    const stopDead = client.onDead((event) => dead.resolve(event), { kindPrefix: 'listen' });
    await opened.promise;
    const { job } = await client.enqueue({ kind: 'listen' }, acme);
    const [leased] = await client.lease({ workerId: 'w', kinds: ['listen'] });
    await client.complete(job.jobId, { workerId: 'w', leaseGeneration: (leased as JobRecord).leaseGeneration });
    assert.equal((await completed.promise).job.jobId, job.jobId);
    stopCompleted();
    stopDead();
  });
});

describe('Watch with tokens', () => {
  const { server } = liveServer({
    server: {
      http_address: '',
      tokens: [
        { token: TOKENS.acme, role: 'tenant', tenant: 'acme' },
        { token: TOKENS.globex, role: 'tenant', tenant: 'globex' },
        { token: TOKENS.worker, role: 'worker' },
        { token: TOKENS.operator, role: 'operator' },
      ],
    },
  });
  const client = (token: string): TelhaClient => new TelhaClient({ address: server.address, token });

  it("shows a tenant its own scope's transitions and never another's", async () => {
    const tenant = client(TOKENS.acme);
    const operator = client(TOKENS.operator);
    try {
      const watch = await watching(tenant, { until: (seen) => seen.some((e) => e.job.kind === 'open') });
      await operator.enqueue({ kind: 'secret' }, globex);
      await operator.enqueue({ kind: 'open' }, acme);
      // Transitions arrive in commit order: globex's came first, so it would have been seen.
      const seen = await watch.done;
      assert.deepEqual(
        seen.map((e) => [e.job.tenant, e.transition]),
        [['acme', 'enqueued']],
      );
    } finally {
      tenant.close();
      operator.close();
    }
  });

  it('answers PERMISSION_DENIED to a worker token and to a tenant naming another scope, NOT_FOUND for its job', async () => {
    const worker = client(TOKENS.worker);
    const tenant = client(TOKENS.acme);
    const operator = client(TOKENS.operator);
    try {
      const code = (promise: Promise<unknown>): Promise<ErrorCode> =>
        promise.then(
          () => assert.fail('the watch was allowed'),
          (error: TelhaError) => error.code,
        );
      assert.equal(await code(worker.watch().next()), ErrorCode.PermissionDenied);
      assert.equal(await code(tenant.watch({ scope: globex }).next()), ErrorCode.PermissionDenied);
      const { job } = await operator.enqueue({ kind: 'theirs' }, globex);
      assert.equal(await code(tenant.watch({ jobId: job.jobId }).next()), ErrorCode.NotFound);
      assert.equal(await code(tenant.result(job.jobId)), ErrorCode.NotFound);
    } finally {
      worker.close();
      tenant.close();
      operator.close();
    }
  });
});

describe('Watch streams and the parked-call budget', () => {
  it('counts each open watch against server.max_parked_calls', async () => {
    const server = await startTestServer({ server: { http_address: '', max_parked_calls: 1 } });
    const client = new TelhaClient({ address: server.address });
    try {
      const stop = new AbortController();
      const held = await watching(client, { signal: stop.signal, until: () => false });
      await assert.rejects(client.watch().next(), (error: TelhaError) => {
        assert.equal(error.code, ErrorCode.ResourceExhausted);
        assert.match(error.message, /server\.max_parked_calls/);
        return true;
      });
      stop.abort();
      await held.done;
    } finally {
      client.close();
      await server.close();
    }
  });
});

describe('Watch from a client built from the .proto alone', () => {
  let server: TestServer;
  let stub: any;
  let producer: TelhaClient;
  before(async () => {
    server = await startTestServer({ server: { http_address: '' } });
    stub = queueServiceFromProto(server.address);
    producer = new TelhaClient({ address: server.address });
  });
  after(async () => {
    producer.close();
    (stub as grpc.Client).close();
    await server.close();
  });

  it('opens with a resume token, streams each transition with its job and token, and resumes from either', async () => {
    const call: grpc.ClientReadableStream<any> = stub.Watch({ kind_prefix: 'interop' }, new grpc.Metadata());
    const messages: any[] = [];
    const got = deferred();
    call.on('data', (message: any) => {
      messages.push(message);
      if (messages.length === 2) got.resolve();
    });
    call.on('error', () => undefined);
    await new Promise<void>((resolve) => call.once('data', () => resolve()));
    const { job } = await producer.enqueue({ kind: 'interop', payload: 'hello' }, acme);
    await got.promise;
    call.cancel();
    assert.match(messages[0].resume_token, /^r1\.[0-9a-f]+\.\d+$/);
    assert.equal(messages[0].events.length, 0);
    const [event] = messages[1].events;
    assert.equal(event.transition, 'enqueued');
    assert.equal(event.job.job_id, job.jobId);
    assert.equal(event.job.state, 'JOB_STATE_PENDING');
    assert.equal(Buffer.from(event.job.payload).length, 0, 'the payload stays with Show');
    assert.equal(event.resume_token, messages[1].resume_token);
    // From the token the watch opened with, the same event again, and nothing twice.
    const again: grpc.ClientReadableStream<any> = stub.Watch(
      { kind_prefix: 'interop', resume_token: messages[0].resume_token },
      new grpc.Metadata(),
    );
    again.on('error', () => undefined);
    const replayed = await new Promise<any>((resolve) =>
      again.on('data', (message: any) => {
        if (message.events.length > 0) resolve(message);
      }),
    );
    again.cancel();
    assert.deepEqual(
      replayed.events.map((e: any) => [e.sequence, e.job.job_id]),
      [[event.sequence, job.jobId]],
    );
  });

  it('gives a watcher that stopped reading every event once it reads again', async () => {
    const call: grpc.ClientReadableStream<any> = stub.Watch({ kind_prefix: 'stall' }, new grpc.Metadata());
    call.on('error', () => undefined);
    await new Promise<void>((resolve) => call.once('data', () => resolve()));
    call.pause();
    const enqueued = 20_000;
    // Far more than the transport buffers hold: the server stops reading the log until it drains.
    for (let i = 0; i < enqueued; i += 1_000) await producer.enqueueBatch(jobsOf(1_000, 'stall'), acme);
    let events = 0;
    const all = deferred();
    call.on('data', (message: any) => {
      if ((events += message.events.length) === enqueued) all.resolve();
    });
    call.resume();
    await all.promise;
    call.cancel();
    assert.equal(events, enqueued);
  });
});

describe('a Watch stream on a transport that is not reading', () => {
  it('reads one batch of the log at a time, and the next only once the transport has taken the last', async () => {
    const server = await startTestServer({ server: { http_address: '' } });
    try {
      const { queue } = server;
      const from = await queue.feed.head();
      await queue.enqueueBatch(jobsOf(1_000, 'held'), acme);
      await queue.enqueueBatch(jobsOf(1_000, 'held'), acme);
      const sent: number[] = [];
      /** Whether the transport takes each message at once; else it waits for `take`. */
      let reading = false;
      let waiting = deferred();
      let take = deferred();
      const all = deferred();
      const service = createQueueService({
        queue,
        auth: new Authenticator([]),
        config: queue.config.server,
        logger: silentLogger,
        shutdown: new AbortController().signal,
      });
      const abort = new AbortController();
      service.watch(create(WatchRequestSchema, { resumeToken: from }), {
        authorization: null,
        signal: abort.signal,
        send: (message) => {
          sent.push(fromBinary(WatchResponseSchema, message).events.length);
          if (sent.reduce((a, b) => a + b, 0) === 2_000) all.resolve();
          if (reading) return Promise.resolve();
          waiting.resolve();
          return take.promise;
        },
        end: () => undefined,
        fail: (status) => assert.fail(status.message),
      });
      // Not reading: the open message waits to be taken, and nothing more is read or sent.
      await waiting.promise;
      assert.deepEqual(sent, [0]);
      waiting = deferred();
      const taken = take;
      take = deferred();
      taken.resolve();
      await waiting.promise;
      assert.deepEqual(sent, [0, 100], 'one batch per message taken');
      // Reading again: the rest at once.
      reading = true;
      take.resolve();
      await all.promise;
      assert.deepEqual(sent, [0, ...Array<number>(20).fill(100)]);
      abort.abort();
    } finally {
      await server.close();
    }
  });
});
