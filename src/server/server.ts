/**
 * The gRPC listener of `telha serve` (@grpc/grpc-js) for workers, tenants and operators: the
 * transport-agnostic handlers of `service.ts` as grpc-js handlers. `src/serve/` composes it with
 * the HTTP listener and telemetry; this room knows neither.
 */
import { setMaxListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import type { TelhaConfig } from '../core/config.ts';
import { invalidArgument } from '../core/errors.ts';
import { LazyAbort } from '../util/lazy-abort.ts';
import type { Logger } from '../core/logger.ts';
import type { Queue } from '../engine/queue.ts';
import {
  FIELD_HEADER,
  JOB_HEADER,
  MAX_MESSAGE_BYTES,
  queueServerDefinition,
  REASON_HEADER,
  RESUME_TOKEN_HEADER,
  responseOf,
  UNTAKEN_HEADER,
  WORK_OPEN_HEADER,
  Status,
  UndecodableRequest,
  type Decoded,
  type MethodName,
} from '../wire/service.ts';
import { assertLoopbackWhenOpen, cannotListen, splitAddress } from '../edge/address.ts';
import type { Authenticator } from '../edge/auth.ts';
import { create } from '@bufbuild/protobuf';
import {
  ProduceResponseSchema,
  WorkResponseSchema,
  type ProduceRequest,
  type ProduceResponse,
  type WatchRequest,
  type WatchResponse,
  type WorkRequest,
  type WorkResponse,
} from '../gen/telha/v1/queue_pb.ts';
import { CallFailed, createQueueService, type CallContext, type QueueServiceHandlers } from './service.ts';
import { describeError, type WireStatus } from '../edge/status.ts';
import type { WatchStream } from './watch.ts';
import type { CallObserver } from '../telemetry/telemetry.ts';

export interface RunningGrpc {
  /** `host:port` actually bound (port 0 in the config picks a free one). */
  readonly address: string;
  readonly port: number;
  readonly tls: boolean;
  /**
   * Stop accepting; parked long-polls return at once with no jobs; let other calls finish for up
   * to `graceMs`, then cut the rest.
   */
  close(graceMs: number): Promise<void>;
}

/** Start the gRPC listener on `server.address`; `calls` counts every call's outcome. */
export async function startGrpcServer(options: {
  queue: Queue;
  config: TelhaConfig;
  logger: Logger;
  auth: Authenticator;
  calls: CallObserver;
}): Promise<RunningGrpc> {
  const { queue, config, logger, auth, calls } = options;
  const { host, port } = splitAddress(config.server.address);
  assertLoopbackWhenOpen(auth.open, 'server.address', config.server.address);
  const { tls_cert_file: certFile, tls_key_file: keyFile } = config.server;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw invalidArgument('server.tls_cert_file', 'TLS needs both server.tls_cert_file and server.tls_key_file');
  }

  const shutdown = new AbortController();
  // Every parked lease call listens on this signal; there can be thousands.
  setMaxListeners(0, shutdown.signal);
  const service = createQueueService({ queue, auth, config: config.server, logger, shutdown: shutdown.signal });
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });
  server.addService(queueServerDefinition, adaptService(service, logger, calls));

  const credentials =
    certFile !== undefined && keyFile !== undefined
      ? grpc.ServerCredentials.createSsl(null, [
          { cert_chain: readFileSync(certFile), private_key: readFileSync(keyFile) },
        ])
      : grpc.ServerCredentials.createInsecure();
  const bindHost = host.includes(':') ? `[${host}]` : host;
  const boundPort = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${bindHost}:${port}`, credentials, (error, bound) =>
      error ? reject(cannotListen(config.server.address, error)) : resolve(bound),
    );
  }).catch((error: unknown) => {
    server.forceShutdown();
    throw error;
  });

  let closing: Promise<void> | null = null;
  return {
    address: `${bindHost}:${boundPort}`,
    port: boundPort,
    tls: certFile !== undefined,
    close(graceMs) {
      closing ??= (async () => {
        shutdown.abort();
        const drained = new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
        const grace = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs).unref());
        if ((await Promise.race([drained.then(() => 'drained' as const), grace])) === 'timeout') {
          logger.warn({}, 'grace period over: cutting remaining calls');
          server.forceShutdown();
        }
      })();
      return closing;
    },
  };
}

function serviceError(
  status: WireStatus,
  resumeToken: string | null = null,
  metadata = new grpc.Metadata(),
): Partial<grpc.StatusObject> {
  if (resumeToken !== null) metadata.set(RESUME_TOKEN_HEADER, resumeToken);
  if (status.reason !== null) metadata.set(REASON_HEADER, status.reason);
  if (status.jobId !== null) metadata.set(JOB_HEADER, status.jobId);
  if (status.field !== null) metadata.set(FIELD_HEADER, status.field);
  return { code: status.code, details: status.message, metadata };
}

/** The transport-agnostic handlers as grpc-js handlers. */
function adaptService(
  service: QueueServiceHandlers,
  logger: Logger,
  calls: CallObserver,
): grpc.UntypedServiceImplementation {
  const handlers: grpc.UntypedServiceImplementation = {
    work: adaptWork(service, calls),
    watch: adaptWatch(service, logger, calls),
    produce: adaptProduce(service, calls),
  };
  for (const name of Object.keys(service.unary) as MethodName[]) {
    const impl = service.unary[name] as (req: unknown, ctx: CallContext) => Promise<object>;
    handlers[name] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      // Its AbortController is made only when a handler reads the signal (a parked lease):
      // aborting one on grpc-js's 'cancelled' event for every unary call showed in a profile of
      // one-at-a-time enqueues (bench/RESULTS.md, "The measurements behind the code's choices").
      const abort = new LazyAbort();
      call.once('cancelled', () => abort.abort(undefined));
      const authorization = call.metadata.get('authorization')[0];
      const request: unknown = call.request;
      const answer =
        request instanceof UndecodableRequest
          ? Promise.reject(request.error)
          : impl(request, {
              authorization: typeof authorization === 'string' ? authorization : null,
              get signal() {
                return abort.signal;
              },
            });
      answer.then(
        (response) => {
          calls.call(name, Status.OK);
          callback(null, responseOf(name, response as never));
        },
        (error: unknown) => {
          const status = error instanceof CallFailed ? error.status : describeError(error, logger, { method: name });
          calls.call(name, status.code);
          callback(serviceError(status));
        },
      );
    };
  }
  return handlers;
}

/**
 * What every stream handler starts with: the caller's credentials, a signal for a call that went
 * away, and `ending`, which counts the stream's status once (`onEnd` first).
 */
function streamCall(
  call: { once(event: 'cancelled', listener: () => void): unknown; readonly metadata: grpc.Metadata },
  method: string,
  calls: CallObserver,
  onEnd: () => void = () => undefined,
): { authorization: string | null; signal: AbortSignal; ending: (code: Status) => void } {
  const abort = new AbortController();
  let ended = false;
  const ending = (code: Status): void => {
    if (ended) return;
    ended = true;
    onEnd();
    calls.call(method, code);
  };
  call.once('cancelled', () => {
    ending(Status.CANCELLED);
    abort.abort();
  });
  const authorization = call.metadata.get('authorization')[0];
  return { authorization: typeof authorization === 'string' ? authorization : null, signal: abort.signal, ending };
}

/** The Work stream: grpc-js's duplex stream feeding a transport-agnostic session. */
function adaptWork(
  service: QueueServiceHandlers,
  calls: CallObserver,
): grpc.handleBidiStreamingCall<Decoded<WorkRequest>, WorkResponse> {
  return (call) => {
    calls.workStream(1);
    const { authorization, signal, ending } = streamCall(call, 'work', calls, () => calls.workStream(-1));
    const session = service.openWork({
      authorization,
      signal,
      opened: () => {
        const headers = new grpc.Metadata();
        headers.set(WORK_OPEN_HEADER, '1');
        call.sendMetadata(headers);
      },
      send: (message) => call.write(create(WorkResponseSchema, message)),
      end: () => {
        ending(Status.OK);
        call.end();
      },
      // grpc-js ends the call with this status (its documented way for streaming handlers).
      fail: (status) => {
        ending(status.code);
        call.emit('error', serviceError(status));
      },
    });
    call.on('data', (message: Decoded<WorkRequest>) => session.receive(message));
    call.on('end', () => session.finish());
  };
}

/** Trailers of a Produce stream the server ended itself: every request without an answer was not taken. */
function untaken(): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set(UNTAKEN_HEADER, '1');
  return metadata;
}

/** The Produce stream: grpc-js's duplex stream, paused and resumed for back-pressure, feeding a session. */
function adaptProduce(
  service: QueueServiceHandlers,
  calls: CallObserver,
): grpc.handleBidiStreamingCall<Decoded<ProduceRequest>, ProduceResponse> {
  return (call) => {
    const { authorization, signal, ending } = streamCall(call, 'produce', calls);
    const session = service.openProduce({
      authorization,
      signal,
      send: (message) => call.write(create(ProduceResponseSchema, message)),
      pause: () => call.pause(),
      resume: () => call.resume(),
      end: () => {
        ending(Status.OK);
        call.end(untaken());
      },
      fail: (status) => {
        ending(status.code);
        call.emit('error', serviceError(status, null, untaken()));
      },
    });
    call.on('data', (message: Decoded<ProduceRequest>) => session.receive(message));
    call.on('end', () => session.finish());
  };
}

/** A Watch stream: grpc-js's server stream, with its back-pressure, feeding a transport-agnostic watch. */
function adaptWatch(
  service: QueueServiceHandlers,
  logger: Logger,
  calls: CallObserver,
): grpc.handleServerStreamingCall<Decoded<WatchRequest>, WatchResponse | Uint8Array> {
  return (call) => {
    const opened = streamCall(call, 'watch', calls);
    if (call.request instanceof UndecodableRequest) {
      const status = describeError(call.request.error, logger, { method: 'watch' });
      opened.ending(status.code);
      call.emit('error', serviceError(status));
      return;
    }
    service.watch(call.request, grpcWatchStream(call, opened));
  };
}

/**
 * grpc-js's server stream as the transport a watch writes to: `opened` is what `streamCall` gives
 * the stream (its caller's credentials, a signal for a call that went away, and `ending`, which
 * counts its status).
 */
export function grpcWatchStream(
  call: grpc.ServerWritableStream<unknown, WatchResponse | Uint8Array>,
  opened: { authorization: string | null; signal: AbortSignal; ending: (code: Status) => void },
): WatchStream {
  const { authorization, signal, ending } = opened;
  return {
    authorization,
    signal,
    // One message at a time, each written once grpc-js has passed the last to HTTP/2 (its write
    // callback): grpc-js's stream accepts 16 messages before write() returns false, and a watch
    // message holds up to 500 events, so a watcher that stopped reading held 16 batches of them
    // (500 such watchers took a 768 MiB heap down: bench/RESULTS.md, unread Watch streams).
    send: (message) =>
      new Promise<void>((resolve) => {
        const done = (): void => {
          signal.removeEventListener('abort', done);
          resolve();
        };
        signal.addEventListener('abort', done, { once: true });
        // Already encoded (`WatchMessages`): the server's serializer passes the bytes through.
        call.write(Buffer.from(message.buffer, message.byteOffset, message.byteLength), done);
      }),
    end: () => {
      ending(Status.OK);
      call.end();
    },
    fail: (status, resumeToken) => {
      ending(status.code);
      call.emit('error', serviceError(status, resumeToken));
    },
  };
}
