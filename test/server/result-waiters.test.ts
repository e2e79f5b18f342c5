/**
 * `client.result` with many waiters: every waiting result of a client shares one Watch stream of
 * outcomes, counted where the server opens it (each Watch stream follows the server's change feed
 * once); each waiter gets its own job's outcome, keeps its own signal, and misses nothing across a
 * server restart.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { TelhaClient } from '../../src/client/client.ts';
import { JobFailedError } from '../../src/client/watch.ts';
import { ErrorCode, type TelhaError } from '../../src/core/errors.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { LOG_RESULT_BYTES } from '../../src/core/transitions-log.ts';
import { JobState, tenantScope, type QueueScope } from '../../src/core/types.ts';
import type { Queue } from '../../src/engine/queue.ts';
import { JobState as WireJobState, WatchRequestSchema } from '../../src/gen/telha/v1/queue_pb.ts';
import { Authenticator } from '../../src/edge/auth.ts';
import { createQueueService } from '../../src/server/service.ts';
import type { WireStatus } from '../../src/edge/status.ts';
import { Status } from '../../src/wire/service.ts';
import { liveServer, restartableServer, type TestServer } from '../support/server.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');
/** A bearer token the test server knows, by its holder's name. */
const token = (name: string): string => `${name}-token-0123456789`;

/**
 * The Watch streams `server` opens from now on, each as the signal that aborts when it ends: every
 * stream follows the server's change feed once.
 */
function watchStreams(server: TestServer): AbortSignal[] {
  const { feed } = server.queue;
  const follow = feed.follow.bind(feed);
  const streams: AbortSignal[] = [];
  feed.follow = (from, limit, filter, signal) => {
    streams.push(signal);
    return follow(from, limit, filter, signal);
  };
  return streams;
}

/** Resolves once `queue` has answered `count` reads of a job (`show`) from now on. */
function reads(queue: Queue, count: number): Promise<void> {
  const show = queue.show.bind(queue);
  let answered = 0;
  return new Promise((resolve) => {
    queue.show = async (...args) => {
      const job = await show(...args);
      if (++answered === count) resolve();
      return job;
    };
  });
}

/** Lease every Pending job of `kind` and complete each with its payload as its result. */
async function completeAll(queue: Queue, kind: string, scope: QueueScope): Promise<void> {
  for (;;) {
    const leased = await queue.lease({ workerId: 'w', kinds: [kind], scope, limit: 100 });
    if (leased.length === 0) return;
    for (const job of leased) {
      await queue.complete(job.jobId, { workerId: 'w', leaseGeneration: job.leaseGeneration }, { result: job.payload });
    }
  }
}

const text = (bytes: Uint8Array | null): string => Buffer.from(bytes ?? new Uint8Array()).toString();

/** Counts the reads of a job (`show`) `queue` answers from now on: Show calls, and each waiter's first look. */
function countReads(queue: Queue): { readonly count: number; reached(count: number): Promise<void> } {
  const show = queue.show.bind(queue);
  let answered = 0;
  const waiting: { count: number; resolve: () => void }[] = [];
  queue.show = async (...args) => {
    const job = await show(...args);
    answered++;
    for (const w of waiting) if (w.count === answered) w.resolve();
    return job;
  };
  return {
    get count() {
      return answered;
    },
    reached: (count) =>
      answered >= count ? Promise.resolve() : new Promise((resolve) => waiting.push({ count, resolve })),
  };
}

describe('live.client.result with many waiters', () => {
  const live = liveServer({ server: { http_address: '' } });

  it('waits for 1,000 results on one Watch stream, each resolving with its own job’s result', async () => {
    const streams = watchStreams(live.server);
    const jobs = Array.from({ length: 1_000 }, (_, i) => ({ kind: 'many', payload: `"job ${i}"` }));
    const enqueued = await live.client.enqueueBatch(jobs, acme);
    const results = enqueued.map(({ job }) => live.client.result(job.jobId));
    await completeAll(live.server.queue, 'many', acme);
    const outcomes = await Promise.all(results);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.json()),
      jobs.map((_, i) => `job ${i}`),
    );
    assert.equal(streams.length, 1, `the client opened ${streams.length} Watch streams for 1,000 waiters`);
    await once(streams[0] as AbortSignal, 'abort');
  });

  it('reads again only the jobs whose result was too big for their event, not those completed without one', async () => {
    const kind = 'sizes';
    const enqueued = await live.client.enqueueBatch(
      Array.from({ length: 40 }, () => ({ kind })),
      acme,
    );
    const reads = countReads(live.server.queue);
    const results = enqueued.map(({ job }) => live.client.result(job.jobId));
    // Each waiter's first look at its job: after it, what a waiter reads is a completion's.
    await reads.reached(enqueued.length);
    const big = (i: number): Uint8Array => new Uint8Array(LOG_RESULT_BYTES + 1 + i).fill(i);
    const leased = await live.server.queue.lease({ workerId: 'w', kinds: [kind], scope: acme, limit: 40 });
    const fence = (job: { jobId: string; leaseGeneration: number }) => ({
      jobId: job.jobId,
      fence: { workerId: 'w', leaseGeneration: job.leaseGeneration },
    });
    // One commit of 30 completions without a result, then 10 with results the events leave out.
    const byId = new Map(enqueued.map(({ job }, i) => [job.jobId, i]));
    const withResult = (job: { jobId: string }): boolean => (byId.get(job.jobId) ?? 0) >= 30;
    await live.server.queue.completeEach(leased.filter((job) => !withResult(job)).map(fence), acme);
    await live.server.queue.completeEach(
      leased.filter(withResult).map((job) => ({ ...fence(job), result: big(byId.get(job.jobId) ?? 0) })),
      acme,
    );
    const outcomes = await Promise.all(results);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.result?.byteLength ?? null),
      enqueued.map((_, i) => (i < 30 ? null : LOG_RESULT_BYTES + 1 + i)),
    );
    assert.ok(outcomes.slice(30).every((outcome, i) => outcome.result?.every((byte) => byte === 30 + i)));
    assert.equal(reads.count - enqueued.length, 10, 'one read for each result left out of its event, and no other');
  });

  it('ends its stream when the last waiter goes, and opens one again for the next', async () => {
    const streams = watchStreams(live.server);
    const { job: first } = await live.client.enqueue({ kind: 'again', payload: '1' }, acme);
    const waiting = live.client.result(first.jobId);
    await completeAll(live.server.queue, 'again', acme);
    assert.equal((await waiting).json(), 1);
    await once(streams[0] as AbortSignal, 'abort');
    const { job: second } = await live.client.enqueue({ kind: 'again', payload: '2' }, acme);
    const next = live.client.result(second.jobId);
    await completeAll(live.server.queue, 'again', acme);
    assert.equal((await next).json(), 2);
    assert.equal(streams.length, 2);
  });

  it('cancels and times out one waiter alone, while the others on the stream wait on', async () => {
    const { job } = await live.client.enqueue({ kind: 'shared', payload: '"done"' }, acme);
    const { job: idle } = await live.client.enqueue({ kind: 'nobody-works-this' }, acme);
    const cancel = new AbortController();
    const cancelled = live.client.result(job.jobId, { signal: cancel.signal });
    const timedOut = live.client.result(idle.jobId, { timeoutMs: 50 });
    const waiting = live.client.result(job.jobId);
    cancel.abort();
    await assert.rejects(cancelled, /waiting for job .* was cancelled/);
    await assert.rejects(timedOut, /has no outcome after 50 ms/);
    await completeAll(live.server.queue, 'shared', acme);
    assert.equal((await waiting).json(), 'done');
  });

  it('rejects every waiter of a dead job with its failure, and reads a job already settled at once', async () => {
    const { job } = await live.client.enqueue({ kind: 'doomed' }, acme);
    const waiters = [live.client.result(job.jobId), live.client.result(job.jobId)];
    const [leased] = await live.server.queue.lease({ workerId: 'w', kinds: ['doomed'], scope: acme });
    assert.ok(leased);
    await live.server.queue.fail(
      job.jobId,
      { workerId: 'w', leaseGeneration: leased.leaseGeneration },
      { error: 'out of ink', permanent: true },
    );
    for (const waiter of [...waiters, live.client.result(job.jobId)]) {
      await assert.rejects(waiter, (error: JobFailedError) => {
        assert.ok(error instanceof JobFailedError);
        assert.equal(error.job.state, JobState.Dead);
        assert.match(error.message, /is dead: .*out of ink/);
        return true;
      });
    }
  });

  it('refuses a Watch asking for an unspecified state with INVALID_ARGUMENT naming states', async () => {
    const service = createQueueService({
      queue: live.server.queue,
      auth: new Authenticator([]),
      config: live.server.queue.config.server,
      logger: silentLogger,
      shutdown: new AbortController().signal,
    });
    const refused = await new Promise<WireStatus>((resolve) => {
      service.watch(create(WatchRequestSchema, { states: [WireJobState.COMPLETED, WireJobState.UNSPECIFIED] }), {
        authorization: null,
        signal: new AbortController().signal,
        send: () => assert.fail('the watch opened'),
        end: () => assert.fail('the watch ended without an error'),
        fail: resolve,
      });
    });
    assert.equal(refused.code, Status.INVALID_ARGUMENT);
    assert.equal(refused.field, 'states');
  });
});

describe('client.result with tokens', () => {
  const live = liveServer({
    server: {
      http_address: '',
      tokens: [
        { token: token('acme'), role: 'tenant', tenant: 'acme' },
        { token: token('globex'), role: 'tenant', tenant: 'globex' },
        { token: token('operator'), role: 'operator' },
      ],
    },
  });
  const client = (token: string): TelhaClient => new TelhaClient({ address: live.server.address, token });

  it('gives each tenant its own jobs’ results, on one stream per client, and another’s job reads as not found', async () => {
    const streams = watchStreams(live.server);
    const tenants = { acme: client(token('acme')), globex: client(token('globex')) };
    const operator = client(token('operator'));
    try {
      const waits = [];
      for (const [name, scope] of [
        ['acme', acme],
        ['globex', globex],
      ] as const) {
        const jobs = Array.from({ length: 50 }, (_, i) => ({ kind: 'mine', payload: `"${name} ${i}"` }));
        const enqueued = await tenants[name].enqueueBatch(jobs, scope);
        waits.push(...enqueued.map(({ job }, i) => ({ name, i, result: tenants[name].result(job.jobId) })));
        waits.push(...enqueued.map(({ job }, i) => ({ name, i, result: operator.result(job.jobId) })));
      }
      const { job: theirs } = await operator.enqueue({ kind: 'theirs' }, globex);
      await assert.rejects(tenants.acme.result(theirs.jobId), (error: TelhaError) => error.code === ErrorCode.NotFound);
      await completeAll(live.server.queue, 'mine', acme);
      await completeAll(live.server.queue, 'mine', globex);
      for (const { name, i, result } of waits) assert.equal((await result).json(), `${name} ${i}`);
      assert.equal(streams.length, 3, 'one stream for each of the three clients');
    } finally {
      tenants.acme.close();
      tenants.globex.close();
      operator.close();
    }
  });
});

describe('client.result across a server restart', () => {
  it('resolves waiters whose jobs completed while the client was away, on the resumed stream', async () => {
    const server = await restartableServer({ server: { http_address: '' } });
    const client = new TelhaClient({ address: server.address });
    try {
      const enqueued = await client.enqueueBatch(
        Array.from({ length: 20 }, (_, i) => ({ kind: 'restart', payload: String(i) })),
        acme,
      );
      const first = server.current;
      const read = reads(first.queue, enqueued.length);
      const results = enqueued.map(({ job }) => client.result(job.jobId));
      // Every waiter has read its job on the stream's first server: the first half completes
      // there, the rest on the next server, before or after the client is back.
      await read;
      const half = await first.queue.lease({ workerId: 'w', kinds: ['restart'], scope: acme, limit: 10 });
      for (const job of half) {
        const fence = { workerId: 'w', leaseGeneration: job.leaseGeneration };
        await first.queue.complete(job.jobId, fence, { result: job.payload });
      }
      const second = await server.restart();
      await completeAll(second.queue, 'restart', acme);
      const outcomes = await Promise.all(results);
      assert.deepEqual(
        outcomes.map((outcome) => text(outcome.result)),
        enqueued.map((_, i) => String(i)),
      );
    } finally {
      client.close();
      await server.close();
    }
  });
});
