/**
 * What a `Worker` given no logger says: pino on stderr, from info up (losing and regaining the
 * server, lost leases, failed handlers), so a worker that cannot reach its server is never
 * silent. JSON lines, or pino-pretty's readable lines when stderr is a terminal; the level from
 * `TELHA_LOG_LEVEL` (`silent` says nothing). Pass `silentLogger`, or a logger of your own.
 *
 * Written synchronously: a worker logs rarely, and a line about why it is dying should not be lost
 * in a buffer when it does.
 */
import { pino } from 'pino';
import { PinoPretty } from 'pino-pretty';
import { REDACTED_LOG_FIELDS, type Logger } from '../core/logger.ts';

let shared: Logger | null = null;

/** The process's one default worker logger, made on first use. */
export function defaultWorkerLogger(): Logger {
  shared ??= pino(
    {
      name: 'telha-worker',
      level: process.env['TELHA_LOG_LEVEL'] ?? 'info',
      redact: { paths: [...REDACTED_LOG_FIELDS], censor: '[redacted]' },
    },
    process.stderr.isTTY
      ? PinoPretty({ destination: 2, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
      : pino.destination({ fd: 2, sync: true }),
  );
  return shared;
}
