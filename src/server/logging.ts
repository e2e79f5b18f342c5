/**
 * Structured logs: one line per event, JSON when stderr is not a terminal,
 * human-readable when it is. Anything that looks like a secret is redacted.
 */
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
