/**
 * `telha serve`: the process that owns the store, composed of its listeners. gRPC (`server/`) for
 * workers, tenants and operators and HTTP (`http/`: probes, metrics, the dashboard) share one
 * authenticator and one telemetry; this room starts them in order and stops them in reverse, and
 * is the only one that knows both (a folder rule keeps `server/` and `http/` apart).
 */
import type { TelhaConfig } from '../core/config.ts';
import type { Logger } from '../core/logger.ts';
import type { Queue } from '../engine/queue.ts';
import { cannotListen, isListenError } from '../edge/address.ts';
import { Authenticator } from '../edge/auth.ts';
import { startHttpServer, type RunningHttp } from '../http/server.ts';
import { startGrpcServer } from '../server/server.ts';
import { Telemetry, type CallObserver } from '../telemetry/telemetry.ts';

export interface RunningServer {
  /** `host:port` actually bound (port 0 in the config picks a free one). */
  readonly address: string;
  readonly port: number;
  readonly tls: boolean;
  /** The HTTP listener (`server.http_address`), or `null` when it is turned off. */
  readonly http: { readonly address: string; readonly port: number } | null;
  /** Stop accepting, let in-flight calls finish (up to `server.shutdown_grace_ms`), then cut the rest. Does not close the queue. */
  close(): Promise<void>;
}

export { isLoopback, splitAddress } from '../edge/address.ts';

/** Nothing observes calls when there is no HTTP listener to show what it would count. */
const UNOBSERVED: CallObserver = { call: () => undefined, workStream: () => undefined };

export async function startServer(options: {
  queue: Queue;
  config: TelhaConfig;
  logger: Logger;
}): Promise<RunningServer> {
  const { queue, config, logger } = options;
  const auth = new Authenticator(config.server.tokens);
  // Watch streams read the store's transitions log through the queue's feed.
  const feed = queue.feed;
  // The engine is observed (metrics, live charts) only when there is an HTTP listener to show them.
  const telemetry = config.server.http_address === '' ? null : new Telemetry(queue, config, logger);
  const grpc = await startGrpcServer({ queue, config, logger, auth, calls: telemetry ?? UNOBSERVED }).catch(
    (error: unknown) => {
      telemetry?.stop();
      feed.close();
      throw error;
    },
  );
  let http: RunningHttp | null = null;
  if (telemetry !== null) {
    try {
      http = await startHttpServer({ queue, config, logger, auth, telemetry });
    } catch (error) {
      telemetry.stop();
      await grpc.close(0);
      feed.close();
      throw isListenError(error) ? cannotListen(config.server.http_address, error) : error;
    }
    telemetry.start();
  }
  logger.info(
    { address: grpc.address, tls: grpc.tls, backend: queue.backend, tokenCount: config.server.tokens.length },
    auth.open ? 'listening on loopback without tokens: every local caller is an operator' : 'listening',
  );

  let closing: Promise<void> | null = null;
  return {
    address: grpc.address,
    port: grpc.port,
    tls: grpc.tls,
    http: http === null ? null : { address: http.address, port: http.port },
    close() {
      closing ??= (async () => {
        logger.info({}, 'shutting down: no new calls');
        const grpcClosed = grpc.close(config.server.shutdown_grace_ms);
        telemetry?.stop();
        const httpClosed = http?.close();
        await grpcClosed;
        await httpClosed;
        feed.close();
      })();
      return closing;
    },
  };
}
