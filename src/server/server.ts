/**
 * `telha serve`: the process that owns the store and speaks gRPC (and
 * gRPC-Web and Connect) to stateless workers, tenants and operators.
 */
import { readFileSync } from 'node:fs';
import { setMaxListeners } from 'node:events';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import type { TelhaConfig } from '../core/config.ts';
import { invalidArgument } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { Queue } from '../engine/queue.ts';
import { QueueService } from '../gen/telha/v1/queue_pb.ts';
import { Authenticator } from './auth.ts';
import { createQueueService } from './service.ts';

export interface RunningServer {
  /** `host:port` actually bound (port 0 in the config picks a free one). */
  readonly address: string;
  readonly port: number;
  readonly tls: boolean;
  /** Stop accepting, let in-flight calls finish (up to `server.shutdown_grace_ms`), then cut the rest. Does not close the queue. */
  close(): Promise<void>;
}

export function splitAddress(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(address.slice(at + 1)) };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export async function startServer(options: { queue: Queue; config: TelhaConfig; logger: Logger }): Promise<RunningServer> {
  const { queue, config, logger } = options;
  const { host, port } = splitAddress(config.server.address);
  const auth = new Authenticator(config.server.tokens);
  if (auth.open && !isLoopback(host)) {
    throw invalidArgument(
      'server.address',
      `refusing to listen on ${config.server.address} without server.tokens: anyone who can reach it could read and change every tenant's jobs. Configure tokens, or bind 127.0.0.1.`,
    );
  }
  const { tls_cert_file: certFile, tls_key_file: keyFile } = config.server;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw invalidArgument('server.tls_cert_file', 'TLS needs both server.tls_cert_file and server.tls_key_file');
  }

  const shutdown = new AbortController();
  // Every parked lease call listens on this signal; there can be thousands.
  setMaxListeners(0, shutdown.signal);
  const handler = connectNodeAdapter({
    // Jobs are small and the network is a LAN or loopback: compressing responses costs CPU and saves nothing.
    acceptCompression: [],
    routes: (router) => {
      router.service(QueueService, createQueueService({ queue, auth, config: config.server, logger, shutdown: shutdown.signal }));
    },
    shutdownSignal: shutdown.signal,
  });
  const server =
    certFile !== undefined && keyFile !== undefined
      ? http2.createSecureServer({ cert: readFileSync(certFile), key: readFileSync(keyFile), allowHTTP1: true }, handler)
      : http2.createServer(handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const address = `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
  logger.info(
    { address, tls: certFile !== undefined, backend: queue.backend, tokenCount: config.server.tokens.length },
    auth.open ? 'listening on loopback without tokens: every local caller is an operator' : 'listening',
  );

  let closing: Promise<void> | null = null;
  return {
    address,
    port: bound.port,
    tls: certFile !== undefined,
    close() {
      closing ??= (async () => {
        logger.info({ inFlightSessions: sessions.size }, 'shutting down: no new calls');
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Parked long-polls return at once with no jobs; other calls run to completion.
        shutdown.abort();
        for (const session of sessions) session.close();
        const grace = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), config.server.shutdown_grace_ms).unref());
        if ((await Promise.race([closed.then(() => 'closed' as const), grace])) === 'timeout') {
          logger.warn({ sessions: sessions.size }, 'grace period over: cutting remaining calls');
          for (const session of sessions) session.destroy();
          await closed;
        }
      })();
      return closing;
    },
  };
}
