/**
 * Structured logs: one line per event, JSON when stderr is not a terminal,
 * human-readable when it is. Anything that looks like a secret is redacted.
 */
import { pino, type Logger as PinoLogger } from 'pino';
import { REDACTED_LOG_FIELDS } from '../core/logger.ts';

export function createLogger(options: { level?: string; pretty?: boolean } = {}): PinoLogger {
  const pretty = options.pretty ?? process.stderr.isTTY;
  return pino(
    {
      level: options.level ?? process.env['TELHA_LOG_LEVEL'] ?? 'info',
      base: { service: 'telha' },
      redact: {
        paths: [...REDACTED_LOG_FIELDS],
        censor: '[redacted]',
      },
      ...(pretty
        ? {
            transport: {
              target: 'pino-pretty',
              options: { destination: 2, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' },
            },
          }
        : {}),
    },
    pretty ? undefined : pino.destination({ fd: 2, sync: false }),
  );
}
