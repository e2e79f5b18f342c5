/**
 * Watch: every committed transition, in order, to the watchers allowed to see
 * it; resumable with a token; bounded for a watcher that stops reading; and
 * `client.result` built on it.
 */
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return --
   the interop part builds its client from the .proto file at run time: untyped by design. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { TelhaClient } from '../../src/client/client.ts';
import { JobFailedError, type WatchEvent } from '../../src/client/watch.ts';
import { PermanentError, Worker } from '../../src/client/worker.ts';
import { ErrorCode, type TelhaError } from '../../src/core/errors.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { JobState, tenantScope, type JobRecord, type NewJob } from '../../src/core/types.ts';
import { ChangeFeed, FEED_RESULT_BYTES } from '../../src/engine/feed.ts';
import { QueueEventEmitter } from '../../src/engine/observers.ts';
import { freePort, startTestServer, type TestServer } from '../support/server.ts';

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
  let server: TestServer;
  let client: TelhaClient;
  before(async () => {
    server = await startTestServer({ server: { http_address: '' } });
    client = new TelhaClient({ address: server.address });
  });
  after(async () => {
    client.close();
    await server.close();
  });

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

  it('refuses a resume token from another server, or an earlier run of this one', async () => {
    const other = await startTestServer({ server: { http_address: '' } });
    const otherClient = new TelhaClient({ address: other.address });
    try {
      const stop = new AbortController();
      const { opened, done } = await watching(client, { until: () => true, signal: stop.signal });
      stop.abort();
      await done;
      const iterator = otherClient.watch({ resumeToken: opened });
      await assert.rejects(iterator.next(), (error: TelhaError) => {
        assert.equal(error.code, ErrorCode.FailedPrecondition);
        assert.match(error.message, /resume token too old or from another server/);
        return true;
      });
    } finally {
      otherClient.close();
      await other.close();
    }
  });

  it('reconnects through a server restart, and is told the restarted server no longer has its events', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    let first: TestServer | null = await startTestServer({ server: { address, http_address: '' } });
    const watcher = new TelhaClient({ address });
    let second: TestServer | null = null;
    try {
      const opened = deferred();
      const seen: WatchEvent[] = [];
      const watch = (async () => {
        for await (const event of watcher.watch({ onOpen: () => opened.resolve() })) seen.push(event);
      })();
      watch.catch(() => undefined);
      await opened.promise;
      await watcher.enqueue({ kind: 'before-restart' }, acme);
      await first.close();
      first = null;
      second = await startTestServer({ server: { address, http_address: '' } });
      await assert.rejects(watch, (error: TelhaError) => {
        assert.equal(error.code, ErrorCode.FailedPrecondition);
        assert.match(error.message, /resume token too old or from another server/);
        return true;
      });
      assert.deepEqual(
        seen.map((e) => e.transition),
        ['enqueued'],
      );
    } finally {
      watcher.close();
      await first?.close();
      await second?.close();
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
  let server: TestServer;
  const client = (token: string): TelhaClient => new TelhaClient({ address: server.address, token });
  before(async () => {
    server = await startTestServer({
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
  });
  after(() => server.close());

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
  const definition = protoLoader.loadSync(fileURLToPath(new URL('../../proto/telha/v1/queue.proto', import.meta.url)), {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
  });
  const proto = grpc.loadPackageDefinition(definition) as any;
  const BUFFER = 1_000;
  let server: TestServer;
  let stub: any;
  let producer: TelhaClient;
  before(async () => {
    server = await startTestServer({ server: { http_address: '' }, watch: { buffer_events: BUFFER } });
    stub = new proto.telha.v1.QueueService(server.address, grpc.credentials.createInsecure());
    producer = new TelhaClient({ address: server.address });
  });
  after(async () => {
    producer.close();
    (stub as grpc.Client).close();
    await server.close();
  });

  it('opens with a resume token, then streams each transition with its job', async () => {
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
    assert.match(messages[0].resume_token, /^[0-9a-f]+:\d+$/);
    assert.equal(messages[0].events.length, 0);
    const [event] = messages[1].events;
    assert.equal(event.transition, 'enqueued');
    assert.equal(event.job.job_id, job.jobId);
    assert.equal(event.job.state, 'JOB_STATE_PENDING');
    assert.equal(Buffer.from(event.job.payload).length, 0, 'the payload stays with Show');
    assert.equal(messages[1].resume_token, `${messages[0].resume_token.split(':')[0]}:${event.sequence}`);
  });

  it('ends a watcher that stopped reading with RESOURCE_EXHAUSTED and its resume token', async () => {
    const call: grpc.ClientReadableStream<any> = stub.Watch({ kind_prefix: 'stall' }, new grpc.Metadata());
    const status = new Promise<grpc.ServiceError>((resolve) => call.on('error', resolve));
    await new Promise<void>((resolve) => call.once('data', () => resolve()));
    call.pause();
    const enqueued = 20_000;
    // Far more than the transport buffers hold: the server must stop writing, then end the
    // stream. Batches of a tenth of the buffer, so that only falling behind ends it.
    for (let i = 0; i < enqueued; i += BUFFER / 10) await producer.enqueueBatch(jobsOf(BUFFER / 10, 'stall'), acme);
    const received: any[] = [];
    call.on('data', (message: any) => received.push(message));
    call.resume();
    const error = await status;
    assert.equal(error.code, grpc.status.RESOURCE_EXHAUSTED);
    const token = error.metadata.get('telha-resume-token')[0];
    const events = received.reduce((n, m) => n + m.events.length, 0);
    assert.ok(events < enqueued, `ended after ${events} of ${enqueued} events`);
    assert.equal(token, received.length === 0 ? token : received[received.length - 1].resume_token);
    // The producer kept writing after the end: the watcher's next events have left the buffer.
    const again: grpc.ClientReadableStream<any> = stub.Watch({ resume_token: token }, new grpc.Metadata());
    again.on('data', () => undefined);
    const refused = await new Promise<grpc.ServiceError>((resolve) => again.on('error', resolve));
    assert.equal(refused.code, grpc.status.FAILED_PRECONDITION);
  });
});

describe('the change feed', () => {
  const record = (i: number, transition: string): JobRecord =>
    ({
      jobId: `job-${i}`,
      tenant: 'acme',
      kind: 'k',
      payload: new Uint8Array(8),
      continuation: null,
      state: JobState.Pending,
      events: [{ at: i, transition, detail: null }],
    }) as unknown as JobRecord;

  it('keeps at most its capacity, and refuses a position whose next event has left', () => {
    const events = new QueueEventEmitter(silentLogger);
    const feed = new ChangeFeed(events, 10);
    const token = feed.token(0);
    for (let i = 1; i <= 25; i++) events.transition('enqueue', [record(i, 'enqueued')], null, i);
    // A heartbeat that only extends the lease is no transition a watcher waits for.
    events.transition('heartbeat', [record(26, 'extended')], JobState.Leased, 26);
    assert.equal(feed.size, 10);
    assert.equal(feed.lastSeq, 25);
    assert.equal(feed.after(0, 100), null);
    assert.deepEqual(
      feed.after(20, 100)?.map((e) => e.job.jobId),
      ['job-21', 'job-22', 'job-23', 'job-24', 'job-25'],
    );
    assert.equal(feed.after(20, 1)?.[0]?.job.payload.byteLength, 0);
    assert.throws(() => feed.resume(token), /too old/);
    assert.equal(feed.resume(feed.token(15)), 15);
    assert.throws(() => new ChangeFeed(events, 10).resume(feed.token(20)), /another server/);
    feed.close();
  });

  it('keeps a small result on a buffered event and leaves a big one to show', () => {
    const events = new QueueEventEmitter(silentLogger);
    const feed = new ChangeFeed(events, 10);
    const done = (i: number, bytes: number): JobRecord => ({
      ...record(i, 'completed'),
      state: JobState.Completed,
      result: new Uint8Array(bytes),
    });
    events.transition('complete', [done(1, FEED_RESULT_BYTES), done(2, FEED_RESULT_BYTES + 1)], JobState.Leased, 1);
    const [small, big] = feed.after(0, 10) ?? [];
    assert.equal(small?.job.result?.byteLength, FEED_RESULT_BYTES);
    assert.equal(big?.job.result, null);
    feed.close();
  });
});
