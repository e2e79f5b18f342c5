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

/**
 * Log fields that may carry a secret (a token, a connection string with its password), which every
 * logger Telha makes writes as `[redacted]`: pino redaction paths.
 */
export const REDACTED_LOG_FIELDS: readonly string[] = [
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'tokens',
  '*.tokens',
  'url',
  '*.url',
];

/** Discards everything. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
