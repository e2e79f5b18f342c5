/**
 * The one place a PostgreSQL failure becomes a Telha error. A lost or refused
 * connection (a restart, a failover, `pg_terminate_backend`,
 * `idle_session_timeout`, the database starting up or full) is `unavailable`:
 * the server answers UNAVAILABLE and workers and clients back off and try
 * again, instead of reading INTERNAL as a bug. Anything else passes through
 * unchanged and stays what it is.
 */
import { ErrorCode, TelhaError } from '../../core/errors.ts';

/** SQLSTATEs that mean the connection, not the statement, failed. */
const CONNECTION_SQLSTATES = new Set([
  /** admin_shutdown: `pg_terminate_backend`, a fast or smart shutdown, `idle_session_timeout`. */
  '57P01',
  /** crash_shutdown: another backend crashed and the server is resetting. */
  '57P02',
  /** cannot_connect_now: the server is starting up or shutting down. */
  '57P03',
  /** too_many_connections: refused at connect; another connection frees up soon. */
  '53300',
]);

/** SQLSTATEs of a database out of a resource (class 53 but too_many_connections, a connection failure above). */
const RESOURCE_SQLSTATES: Readonly<Record<string, string>> = {
  '53100': 'disk space (disk_full)',
  '53200': 'memory (out_of_memory)',
  '53400': 'a configured limit (configuration_limit_exceeded)',
};

/** Socket errors of a connection that is gone or could not be made. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * What node-postgres says when a connection ends under it or cannot be used; it gives these
 * no code, so the message is all there is.
 */
const DRIVER_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'is not queryable',
  // The store is closing: its pool was ended while this call was on its way.
  'Cannot use a pool after calling end',
];

/**
 * Whether `error` says the connection failed, so the statement may not have run (or, for a
 * write, may have committed without the answer arriving). Class 08 SQLSTATEs are connection
 * exceptions of every kind.
 */
export function isConnectionFailure(error: unknown): boolean {
  // Already translated (its message quotes the driver's): a decision was made, do not retry it.
  if (!(error instanceof Error) || error instanceof TelhaError) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (code.startsWith('08') || CONNECTION_SQLSTATES.has(code) || SOCKET_CODES.has(code)))
    return true;
  return DRIVER_MESSAGES.some((text) => error.message.includes(text));
}

/**
 * `error` as the store reports it: a connection failure becomes `unavailable` and a database out
 * of disk or memory `resource_exhausted` (each with its cause kept); the rest is unchanged.
 */
export function pgFailure(error: unknown): unknown {
  const code = error instanceof TelhaError ? undefined : (error as { code?: unknown } | null)?.code;
  const resource = typeof code === 'string' ? RESOURCE_SQLSTATES[code] : undefined;
  if (resource !== undefined) {
    return new TelhaError(
      ErrorCode.ResourceExhausted,
      `the database is out of ${resource}: ${(error as Error).message}; try again once it has room`,
      { cause: error },
    );
  }
  if (!isConnectionFailure(error)) return error;
  return new TelhaError(
    ErrorCode.Unavailable,
    `the database is unreachable: ${(error as Error).message}; try again shortly`,
    { cause: error },
  );
}
