/**
 * Watchers that do not read: what the server holds for them stays one batch
 * however many events happen, and how many streams one caller may hold open
 * is capped (`watch.max_streams_per_principal`).
 */
import assert from 'node:assert/strict';
import { connect } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { TelhaClient } from '../../src/client/client.ts';
import type { WatchEvent } from '../../src/client/watch.ts';
import { ErrorCode, type TelhaError } from '../../src/core/errors.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { tenantScope, type NewJob } from '../../src/core/types.ts';
import {
  WatchRequestSchema,
  WatchResponseSchema,
  type WatchRequest,
  type WatchResponse,
} from '../../src/gen/telha/v1/queue_pb.ts';
import { Authenticator } from '../../src/edge/auth.ts';
import { grpcWatchStream } from '../../src/server/server.ts';
import { createQueueService } from '../../src/server/service.ts';
import { queueServiceDefinition } from '../../src/wire/service.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const acme = tenantScope('acme');

function jobsOf(count: number, kind: string): NewJob[] {
  return Array.from({ length: count }, (_, i) => ({ kind, payload: String(i) }));
}

/** Enqueue `count` jobs of `kind` into acme, a thousand to a batch. */
async function enqueueMany(server: TestServer, count: number, kind: string): Promise<void> {
  for (let i = 0; i < count; i += 1_000) await server.queue.enqueueBatch(jobsOf(1_000, kind), acme);
}

describe('a Watch stream whose caller does not read', () => {
  let server: TestServer;
  let grpcServer: grpc.Server;
  let port: number;
  /** Each message the server handed grpc-js, with how many messages grpc-js held before it. */
  const sent: { events: number; heldBefore: number }[] = [];
  /** Resolves when the watch writes its first message with events. */
  const firstBatch = deferred();
  let held: grpc.ServerWritableStream<WatchRequest, WatchResponse> | null = null;

  before(async () => {
    server = await startTestServer({ server: { http_address: '' } });
    const service = createQueueService({
      queue: server.queue,
      auth: new Authenticator([]),
      config: server.queue.config.server,
      logger: silentLogger,
      shutdown: new AbortController().signal,
    });
    // The server's own transport, over a real HTTP/2 connection, watched from the side.
    grpcServer = new grpc.Server();
    grpcServer.addService(
      { watch: queueServiceDefinition['watch'] as grpc.MethodDefinition<WatchRequest, WatchResponse> },
      {
        watch: (call: grpc.ServerWritableStream<WatchRequest, WatchResponse>) => {
          held = call;
          const gone = new AbortController();
          call.once('cancelled', () => gone.abort());
          const stream = grpcWatchStream(call, { authorization: null, signal: gone.signal, ending: () => undefined });
          service.watch(call.request, {
            ...stream,
            send: (message) => {
              const events = fromBinary(WatchResponseSchema, message).events.length;
              sent.push({ events, heldBefore: call.writableLength });
              if (events > 0) firstBatch.resolve();
              return stream.send(message);
            },
          });
        },
      },
    );
    port = await new Promise<number>((resolve, reject) =>
      grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
  });
  after(async () => {
    grpcServer.forceShutdown();
    await server.close();
  });

  it('holds one batch of events however many happen while it does not read', async () => {
    const from = await server.queue.feed.head();
    await enqueueMany(server, 20_000, 'unread');
    // A raw HTTP/2 client that opens a watch from before those 20,000 events and never reads:
    // its 1 KiB window takes the opening message and nothing as big as a batch.
    const session = connect(`http://127.0.0.1:${port}`, { settings: { initialWindowSize: 1_024 } });
    try {
      const request = toBinary(WatchRequestSchema, create(WatchRequestSchema, { resumeToken: from }));
      const frame = Buffer.alloc(5 + request.length);
      frame.writeUInt32BE(request.length, 1);
      frame.set(request, 5);
      const stream = session.request({
        ':method': 'POST',
        ':path': '/telha.v1.QueueService/Watch',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      stream.end(frame);

      await firstBatch.promise;
      // Thousands more while that batch waits for the window: the watch reads none of them.
      await enqueueMany(server, 20_000, 'unread');
      assert.deepEqual(
        sent.map(({ events }) => events),
        [0, 100],
        'the opening message, then one batch, then nothing until the transport takes it',
      );
      assert.ok(
        sent.every(({ heldBefore }) => heldBefore === 0),
        `each message is written once grpc-js has passed on the one before (held before each: ${sent
          .map(({ heldBefore }) => heldBefore)
          .join(', ')})`,
      );
      assert.ok((held?.writableLength ?? 0) <= 1, 'grpc-js holds at most the batch it is writing');
      stream.close();
    } finally {
      session.destroy();
    }
  });
});

/** Open a watch and resolve once the server has opened it; `done` settles when `stop` ends it. */
async function openWatch(client: TelhaClient, stop: AbortSignal): Promise<{ done: Promise<WatchEvent[]> }> {
  const opened = deferred();
  const seen: WatchEvent[] = [];
  const done = (async () => {
    for await (const event of client.watch({ signal: stop, onOpen: () => opened.resolve() })) seen.push(event);
    return seen;
  })();
  done.catch(() => undefined);
  await Promise.race([opened.promise, done]);
  return { done };
}

/** Try to open a watch: `opened` (and closed again at once), or the error it was refused with. */
async function tryWatch(client: TelhaClient): Promise<TelhaError | 'opened'> {
  const stop = new AbortController();
  try {
    for await (const event of client.watch({ signal: stop.signal, onOpen: () => stop.abort() })) void event;
    return 'opened';
  } catch (error) {
    return error as TelhaError;
  }
}

describe('Watch streams per principal', () => {
  const TOKENS = { acme: 'acme-token-0123456789', globex: 'globex-token-0123456789' };
  let server: TestServer;
  let acmeClient: TelhaClient;
  let globexClient: TelhaClient;
  before(async () => {
    const tokens = Object.entries(TOKENS).map(([tenant, token]) => ({ token, role: 'tenant', tenant }));
    server = await startTestServer({ server: { http_address: '', tokens }, watch: { max_streams_per_principal: 3 } });
    acmeClient = new TelhaClient({ address: server.address, token: TOKENS.acme });
    globexClient = new TelhaClient({ address: server.address, token: TOKENS.globex });
  });
  after(async () => {
    acmeClient.close();
    globexClient.close();
    await server.close();
  });

  it('refuses a principal its fourth stream with RESOURCE_EXHAUSTED, serves another, and frees a closed slot', async () => {
    const stops = Array.from({ length: 3 }, () => new AbortController());
    const streams = await Promise.all(stops.map((stop) => openWatch(acmeClient, stop.signal)));
    const refused = await tryWatch(acmeClient);
    assert.ok(refused !== 'opened', 'a fourth stream of acme is refused');
    assert.equal(refused.code, ErrorCode.ResourceExhausted);
    assert.match(refused.message, /over 3 open Watch streams for tenant:acme \(watch\.max_streams_per_principal\)/);

    // Another principal has slots of its own.
    const globexStops = Array.from({ length: 3 }, () => new AbortController());
    const globexStreams = await Promise.all(globexStops.map((stop) => openWatch(globexClient, stop.signal)));

    // Closing one of acme's streams gives its slot back: a call on the same connection after the
    // cancel is answered only once the server has read the cancel before it.
    stops[0]?.abort();
    await streams[0]?.done;
    await acmeClient.counts(acme);
    assert.equal(await tryWatch(acmeClient), 'opened');

    for (const stop of [...stops, ...globexStops]) stop.abort();
    await Promise.all([...streams, ...globexStreams].map((stream) => stream.done));
  });
});
