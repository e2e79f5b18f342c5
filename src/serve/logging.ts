/**
 * Structured logs: one line per event, JSON when stderr is not a terminal,
 * human-readable when it is. Anything that looks like a secret is redacted.
 */
import { format } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { REDACTED_LOG_FIELDS } from '../core/logger.ts';

export function createLogger(
  options: {
    level?: string;
    pretty?: boolean;
    /** Where JSON lines go instead of stderr (tests read them here). */
    destination?: DestinationStream;
  } = {},
): PinoLogger {
  const pretty = options.pretty ?? process.stderr.isTTY;
  return pino(
    {
      level: options.level ?? process.env['TELHA_LOG_LEVEL'] ?? 'info',
      // Named `name`, pino's key for the program, not `service`: pino writes a line's own fields
      // after the base ones without merging, so a background service's `service: 'reaper'` made
      // a second `service` key in the same line.
      base: { name: 'telha' },
      redact: {
        paths: [...REDACTED_LOG_FIELDS],
        censor: '[redacted]',
      },
      ...(pretty
        ? {
            transport: {
              target: 'pino-pretty',
              options: { destination: 2, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,name' },
            },
          }
        : {}),
    },
    pretty ? undefined : (options.destination ?? pino.destination({ fd: 2, sync: false })),
  );
}

/**
 * Send grpc-js's own log lines (it writes them to the console, such as "E No address added out of
 * total 1 resolved" before the error `startServer` reports with the address) to `logger` at debug
 * level: the server's errors reach the operator once, in its own words.
 */
export function routeGrpcLogs(logger: PinoLogger): void {
  const line = (...args: unknown[]): void => logger.debug({ library: 'grpc-js' }, format(...args));
  grpc.setLogger({ error: line, info: line, debug: line });
}
