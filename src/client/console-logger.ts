/**
 * What a `Worker` given no logger says, on stderr: one line per event from info up (losing and
 * regaining the server, lost leases, failed handlers), so a worker that cannot reach its
 * server is never silent. Pass `silentLogger` to say nothing, or a pino logger for JSON.
 */
import type { Logger } from '../core/logger.ts';

function line(fields: object, message: string): string {
  const detail = JSON.stringify(fields);
  return detail === '{}' ? `telha: ${message}` : `telha: ${message} ${detail}`;
}

export const consoleLogger: Logger = {
  debug() {},
  info(fields, message) {
    console.warn(line(fields, message));
  },
  warn(fields, message) {
    console.warn(line(fields, message));
  },
  error(fields, message) {
    console.error(line(fields, message));
  },
};
