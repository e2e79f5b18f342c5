/**
 * The logging surface the queue needs; pino's `Logger` satisfies it. Kept as
 * an interface so `core/` and `storage/` depend on no logging library.
 */
export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** Discards everything. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
