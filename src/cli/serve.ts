/** `telha serve`: open the store, start the reaper and maintenance, serve the API until SIGTERM/SIGINT. */
import { loadConfig, openQueue } from '../open.ts';
import { createLogger, routeGrpcLogs } from '../serve/logging.ts';
import { startServer } from '../serve/server.ts';
import type { CliIo } from './io.ts';

export interface ServeOptions {
  readonly config?: string;
  readonly address?: string;
  /** `server.http_address`: the dashboard's; `''` turns it off. */
  readonly httpAddress?: string;
  readonly data?: string;
}

export async function serve(options: ServeOptions, io: Pick<CliIo, 'stdout'>): Promise<number> {
  const overrides: Record<string, Record<string, unknown>> = {};
  const listeners: Record<string, unknown> = {};
  if (options.address !== undefined) listeners['address'] = options.address;
  if (options.httpAddress !== undefined) listeners['http_address'] = options.httpAddress;
  if (Object.keys(listeners).length > 0) overrides['server'] = listeners;
  if (options.data !== undefined) overrides['storage'] = { path: options.data };
  const config = await loadConfig({ ...(options.config ? { file: options.config } : {}), overrides: overrides });
  const logger = createLogger();
  routeGrpcLogs(logger);
  const queue = await openQueue({ config, logger });
  let server;
  try {
    server = await startServer({ queue, config, logger });
  } catch (error) {
    await queue.close();
    throw error;
  }
  logger.info(
    config.storage.kind === 'rocksdb'
      ? { backend: 'rocksdb', path: config.storage.path, durability: config.storage.durability }
      : { backend: 'postgres', schema: config.storage.schema },
    'store open',
  );
  // Tests and scripts wait for this line on stdout to know the port.
  io.stdout(`telha listening on ${server.address}\n`);
  if (server.http !== null) {
    io.stdout(`telha dashboard on http${server.tls ? 's' : ''}://${server.http.address}/\n`);
  }

  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      logger.info({ signal }, 'stopping');
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      resolve();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  await server.close();
  await queue.close();
  logger.info({}, 'stopped');
  return 0;
}
