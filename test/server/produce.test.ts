/**
 * The Produce stream: enqueue requests answered by id on one stream, each as
 * its unary call would answer it; the in-flight bound; the end on shutdown;
 * the SDK sending on it, and sending again only what cannot create a job twice.
 */
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return --
   one test builds its client from the .proto file at run time: untyped by design. */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { TelhaClient } from '../../src/client/client.ts';
import { makeConfig } from '../../src/core/config.ts';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { MAX_PRODUCE_IN_FLIGHT } from '../../src/core/bounds.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import {
  ItemOutcomeSchema,
  ProduceRequestSchema,
  type ProduceRequest,
  type ProduceResponse,
} from '../../src/gen/telha/v1/queue_pb.ts';
import { openQueue } from '../../src/open.ts';
import { Authenticator } from '../../src/edge/auth.ts';
import { openProduceSession, type ProduceAnswer, type ProduceStream } from '../../src/server/produce-session.ts';
import { startServer } from '../../src/serve/server.ts';
import type { WireStatus } from '../../src/edge/status.ts';
import { queueServiceDefinition, responseOf, Status, UNTAKEN_HEADER } from '../../src/wire/service.ts';
import { tempDir } from '../support/backends.ts';
import { written } from '../support/events.ts';
import { queueServiceFromProto } from '../support/proto-client.ts';
import { freePort, liveServer, startTestServer, type TestServer } from '../support/server.ts';

const TOKENS = { acme: 'acme-token-0123456789', worker: 'worker-token-0123456789' };
const Stub = grpc.makeGenericClientConstructor(queueServiceDefinition, 'QueueService');
type RawStream = grpc.ClientDuplexStream<ProduceRequest, ProduceResponse>;

/** A Produce stream opened with grpc-js alone, and what came back on it. */
function openRaw(address: string, token?: string) {
  const stub = new Stub(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set('authorization', `Bearer ${token}`);
  const stream = (stub as unknown as { produce(metadata: grpc.Metadata): RawStream }).produce(metadata);
  const answers = new Map<bigint, ProduceResponse['answer']>();
  const waiting = new Map<bigint, () => void>();
  stream.on('data', (message: ProduceResponse) => {
    answers.set(message.id, message.answer);
    waiting.get(message.id)?.();
  });
  stream.on('error', () => {});
  const ended = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
  return {
    stream,
    answers,
    ended,
    send(id: number, enqueue: ProduceRequest['enqueue']): void {
      stream.write(create(ProduceRequestSchema, { id: BigInt(id), enqueue }));
    },
    answer(id: number): Promise<ProduceResponse['answer']> {
      const known = answers.get(BigInt(id));
      if (known !== undefined) return Promise.resolve(known);
      return new Promise((resolve) => waiting.set(BigInt(id), () => resolve(answers.get(BigInt(id)) as never)));
    },
    close(): void {
      stream.cancel();
      stub.close();
    },
  };
}

const single = (tenant: string, kind: string): ProduceRequest['enqueue'] => ({
  case: 'single',
  value: { scope: { target: { case: 'tenant', value: tenant } }, job: { kind } } as never,
});

async function jobsIn(server: TestServer, tenant: string): Promise<number> {
  const rows = await server.queue.counts(tenantScope(tenant));
  return rows.reduce((sum, row) => sum + row.count, 0);
}

describe('the Produce stream', () => {
  const { server } = liveServer({
    server: {
      tokens: [
        { token: TOKENS.acme, role: 'tenant', tenant: 'acme' },
        { token: TOKENS.worker, role: 'worker' },
      ],
    },
  });

  it('answers each request by its id, whatever order they are answered in', async () => {
    const raw = openRaw(server.address, TOKENS.acme);
    raw.send(70, single('acme', 'one'));
    raw.send(3, { case: 'batch', value: { jobs: [{ kind: 'b1' }, { kind: 'b2' }] } as never });
    raw.send(55, { case: 'each', value: { jobs: [{ kind: 'e1' }, { kind: '' }] } as never });
    const [one, batch, each] = await Promise.all([raw.answer(70), raw.answer(3), raw.answer(55)]);
    assert.equal(one?.case, 'single');
    assert.equal(one.value.result?.job?.kind, 'one');
    assert.equal(batch?.case, 'batch');
    assert.deepEqual(
      batch.value.results.map((r) => r.job?.kind),
      ['b1', 'b2'],
    );
    assert.equal(each?.case, 'each');
    assert.equal(each.value.answers[0]?.answer.case, 'result');
    assert.equal(each.value.answers[1]?.answer.case, 'error');
    raw.stream.end();
    const status = await raw.ended;
    assert.equal(status.code, grpc.status.OK);
    assert.equal(status.metadata.get(UNTAKEN_HEADER)[0], '1');
    raw.close();
  });

  it('answers a bad request with INVALID_ARGUMENT naming the field, writes nothing, and keeps the stream', async () => {
    const before = await jobsIn(server, 'acme');
    const raw = openRaw(server.address, TOKENS.acme);
    raw.send(1, single('acme', 'has space'));
    raw.send(2, { case: undefined });
    const [bad, empty] = await Promise.all([raw.answer(1), raw.answer(2)]);
    assert.equal(bad?.case, 'error');
    assert.equal(bad.value.code, Status.INVALID_ARGUMENT);
    assert.equal(bad.value.field, 'kind', 'as the unary Enqueue names it');
    assert.equal(empty?.case, 'error');
    assert.equal(empty.value.field, 'enqueue');
    assert.equal(await jobsIn(server, 'acme'), before);
    raw.send(3, single('acme', 'fine'));
    assert.equal((await raw.answer(3))?.case, 'single');
    raw.close();
  });

  it("refuses a tenant token another tenant's scope, request by request (PERMISSION_DENIED)", async () => {
    const raw = openRaw(server.address, TOKENS.acme);
    raw.send(1, single('globex', 'theirs'));
    raw.send(2, single('acme', 'ours'));
    const [theirs, ours] = await Promise.all([raw.answer(1), raw.answer(2)]);
    assert.equal(theirs?.case, 'error');
    assert.equal(theirs.value.code, Status.PERMISSION_DENIED);
    assert.equal(ours?.case, 'single');
    assert.equal(await jobsIn(server, 'globex'), 0);
    raw.close();
  });

  it('refuses the stream to a token that may not enqueue, at open, marked untaken', async () => {
    const raw = openRaw(server.address, TOKENS.worker);
    raw.send(1, single('acme', 'nope'));
    const status = await raw.ended;
    assert.equal(status.code, grpc.status.PERMISSION_DENIED);
    assert.equal(status.metadata.get(UNTAKEN_HEADER)[0], '1');
    assert.equal(raw.answers.size, 0);
    raw.close();
    const worker = new TelhaClient({ address: server.address, token: TOKENS.worker });
    await assert.rejects(
      worker.enqueue({ kind: 'nope' }),
      (error: unknown) => error instanceof TelhaError && error.code === ErrorCode.PermissionDenied,
    );
    worker.close();
  });

  it('is usable by a client built from the .proto file alone', async () => {
    const stub: any = queueServiceFromProto(server.address, { oneofs: true });
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${TOKENS.acme}`);
    const stream: grpc.ClientDuplexStream<any, any> = stub.Produce(metadata);
    const answers: any[] = [];
    stream.on('data', (message: any) => answers.push(message));
    const ended = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
    stream.write({ id: '41', single: { job: { kind: 'from-proto' } } });
    stream.write({ id: '42', each: { jobs: [{ kind: 'p1' }, { kind: 'p2' }] } });
    stream.end();
    assert.equal((await ended).code, grpc.status.OK);
    const byId = new Map(answers.map((a: any) => [a.id as string, a]));
    assert.equal(byId.get('41').answer, 'single');
    assert.equal(byId.get('41').single.result.job.kind, 'from-proto');
    assert.equal(byId.get('41').single.result.job.tenant, 'acme');
    assert.deepEqual(
      byId.get('42').each.answers.map((a: any) => a.result.job.kind),
      ['p1', 'p2'],
    );
    stub.close();
  });
});

describe('a Produce session', () => {
  /** A session over a fake transport, with requests that finish when the test says. */
  function session() {
    const shutdown = new AbortController();
    const gone = new AbortController();
    const sent: bigint[] = [];
    const calls: string[] = [];
    const runs: (() => void)[] = [];
    let ended: WireStatus | 'ok' | null = null;
    const stream: ProduceStream = {
      authorization: null,
      signal: gone.signal,
      send: (message) => sent.push(message.id ?? 0n),
      pause: () => calls.push('pause'),
      resume: () => calls.push('resume'),
      end: () => (ended = 'ok'),
      fail: (status) => (ended = status),
    };
    const produce = openProduceSession(stream, {
      auth: new Authenticator([]),
      logger: silentLogger,
      shutdown: shutdown.signal,
      admit: () => () => undefined,
      run: () =>
        new Promise<ProduceAnswer>((resolve) =>
          runs.push(() => resolve({ case: 'batch', value: responseOf('enqueueBatch', {}) })),
        ),
      errorOutcome: () => create(ItemOutcomeSchema, { code: Status.INTERNAL }),
    });
    const request = (id: number): ProduceRequest =>
      create(ProduceRequestSchema, { id: BigInt(id), enqueue: { case: 'batch', value: {} } });
    return { shutdown, sent, calls, runs, ended: () => ended, produce, request };
  }

  const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  it(`stops reading at ${MAX_PRODUCE_IN_FLIGHT} requests in flight and reads again as one is answered`, async () => {
    const s = session();
    for (let id = 1; id < MAX_PRODUCE_IN_FLIGHT; id++) s.produce.receive(s.request(id));
    assert.deepEqual(s.calls, []);
    s.produce.receive(s.request(MAX_PRODUCE_IN_FLIGHT));
    assert.deepEqual(s.calls, ['pause']);
    s.runs[0]?.();
    await settled();
    assert.deepEqual(s.sent, [1n]);
    assert.deepEqual(s.calls, ['pause', 'resume']);
    for (const run of s.runs.slice(1)) run();
    s.produce.finish();
    await settled();
    assert.equal(s.sent.length, MAX_PRODUCE_IN_FLIGHT);
    assert.equal(s.ended(), 'ok');
  });

  it('on shutdown takes nothing more, answers what it took, then ends UNAVAILABLE', async () => {
    const s = session();
    for (const id of [1, 2, 3]) s.produce.receive(s.request(id));
    s.shutdown.abort();
    s.produce.receive(s.request(4));
    assert.equal(s.runs.length, 3, 'the request read after shutdown is not taken');
    assert.equal(s.ended(), null, 'not ended while requests are in flight');
    for (const run of s.runs) run();
    await settled();
    assert.deepEqual(s.sent, [1n, 2n, 3n]);
    const ended = s.ended();
    assert.ok(ended !== null && ended !== 'ok');
    assert.equal(ended.code, Status.UNAVAILABLE);
  });
});

describe('a Produce stream through a shutdown', () => {
  it('answers what the server took and ends UNAVAILABLE marked untaken; the answered jobs are exactly those written', async () => {
    const server = await startTestServer();
    const writtenIds = new Set<string>();
    server.queue.events.on('transition', ({ transition, records }) => {
      if (transition === 'enqueue') for (const record of records) writtenIds.add(record.jobId);
    });
    const raw = openRaw(server.address);
    raw.send(1, single('acme', 'first'));
    await raw.answer(1);
    for (let id = 2; id <= 200; id++) raw.send(id, single('acme', 'burst'));
    const closing = server.close();
    const status = await raw.ended;
    await closing;
    assert.equal(status.code, grpc.status.UNAVAILABLE);
    assert.equal(status.metadata.get(UNTAKEN_HEADER)[0], '1');
    const answeredIds = [...raw.answers.values()].map((a) =>
      a.case === 'single' ? (a.value.result?.job?.jobId ?? '') : `not created: ${a.case ?? 'nothing'}`,
    );
    assert.deepEqual(answeredIds.sort(), [...writtenIds].sort(), 'answered exactly the jobs it wrote');
    raw.close();
  });
});

/** A TCP proxy that can swallow the server's bytes and cut every connection: a lost answer. */
async function lossyProxy(
  target: number,
): Promise<{ port: number; swallow: boolean; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const state = { swallow: false };
  const proxy: Server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      if (!state.swallow) client.write(chunk);
    });
    for (const socket of [client, upstream]) {
      socket.on('error', () => {});
      socket.on('close', () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(socket);
      });
    }
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    port: (proxy.address() as { port: number }).port,
    get swallow() {
      return state.swallow;
    },
    set swallow(value: boolean) {
      state.swallow = value;
    },
    cut() {
      for (const socket of sockets) socket.destroy();
    },
    close: () => new Promise<void>((resolve) => proxy.close(() => resolve())),
  };
}

describe('the SDK on a Produce stream', () => {
  it('sends a request whose answer was lost again only when every job has an idempotency key', async () => {
    const server = await startTestServer();
    const port = Number(server.address.split(':').pop());
    const proxy = await lossyProxy(port);
    const client = new TelhaClient({ address: `127.0.0.1:${proxy.port}` });
    try {
      await client.enqueue({ kind: 'warm' }, tenantScope('acme'));

      proxy.swallow = true;
      const keyedWritten = written(server.queue, 'the keyed job', (r) => r.kind === 'keyed');
      const keyed = client.enqueue({ kind: 'keyed', idempotencyKey: 'k-1' }, tenantScope('acme'));
      const [first] = await keyedWritten;
      proxy.swallow = false;
      proxy.cut();
      const again = await keyed;
      assert.equal(again.job.jobId, first?.jobId, 'the repeat returned the job the lost answer was about');

      proxy.swallow = true;
      const plainWritten = written(server.queue, 'the plain job', (r) => r.kind === 'plain');
      const plain = client.enqueue({ kind: 'plain' }, tenantScope('acme'));
      await plainWritten;
      proxy.swallow = false;
      proxy.cut();
      await assert.rejects(
        plain,
        (error: unknown) => error instanceof TelhaError && error.code === ErrorCode.Unavailable,
      );

      const rows = await server.queue.counts(tenantScope('acme'));
      const count = (kind: string): number => rows.find((r) => r.kind === kind)?.count ?? 0;
      assert.deepEqual([count('keyed'), count('plain')], [1, 1], 'no job was created twice');
    } finally {
      client.close();
      await proxy.close();
      await server.close();
    }
  });

  it('cancels an enqueue by its signal: one not yet sent is never written', async () => {
    const server = await startTestServer();
    const client = new TelhaClient({ address: server.address });
    try {
      const stop = new AbortController();
      const cancelled = client.enqueue({ kind: 'cancelled' }, tenantScope('acme'), { signal: stop.signal });
      const kept = client.enqueue({ kind: 'kept' }, tenantScope('acme'));
      stop.abort();
      const isCancelled = (error: unknown): boolean =>
        error instanceof TelhaError && error.code === ErrorCode.Unavailable && /cancelled/.test(error.message);
      await assert.rejects(cancelled, isCancelled);
      await kept;
      await assert.rejects(
        client.enqueueBatch([{ kind: 'cancelled' }], tenantScope('acme'), { signal: AbortSignal.abort() }),
        isCancelled,
      );
      const rows = await server.queue.counts(tenantScope('acme'));
      assert.deepEqual(
        rows.map((r) => r.kind),
        ['kept'],
      );
    } finally {
      client.close();
      await server.close();
    }
  });

  it('reconnects after the server restarts, creating each job once', async () => {
    const dir = tempDir('telha-produce-');
    const port = await freePort();
    const start = async () => {
      const config = makeConfig({
        storage: { path: dir },
        retention: { enabled: false },
        server: { address: `127.0.0.1:${port}`, http_address: '', shutdown_grace_ms: 1_000 },
      });
      const queue = await openQueue({ config, services: false });
      const running = await startServer({ queue, config, logger: silentLogger });
      return { queue, close: async () => (await running.close(), await queue.close()) };
    };
    let server = await start();
    const client = new TelhaClient({ address: `127.0.0.1:${port}` });
    try {
      const a = await client.enqueue({ kind: 'before' }, tenantScope('acme'));
      await server.close();
      server = await start();
      const b = await client.enqueue({ kind: 'after' }, tenantScope('acme'));
      const batch = await client.enqueueBatch([{ kind: 'after' }, { kind: 'after' }], tenantScope('acme'));
      assert.notEqual(a.job.jobId, b.job.jobId);
      assert.equal(batch.length, 2);
      const rows = await server.queue.counts(tenantScope('acme'));
      assert.deepEqual(
        rows.filter((r) => r.state === JobState.Pending).map((r) => [r.kind, r.count]),
        [
          ['after', 3],
          ['before', 1],
        ],
      );
    } finally {
      client.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('falls back to unary calls against a server without Produce', async () => {
    const bare = new grpc.Server();
    bare.addService(queueServiceDefinition, {
      enqueue: (_call: unknown, callback: grpc.sendUnaryData<unknown>) =>
        callback(null, responseOf('enqueue', { result: { job: { jobId: 'j-1', kind: 'old' }, created: true } })),
    });
    const port = await new Promise<number>((resolve, reject) =>
      bare.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    const client = new TelhaClient({ address: `127.0.0.1:${port}` });
    try {
      assert.equal((await client.enqueue({ kind: 'old' })).job.jobId, 'j-1');
      assert.equal((await client.enqueue({ kind: 'old' })).job.jobId, 'j-1');
    } finally {
      client.close();
      bare.forceShutdown();
    }
  });
});
