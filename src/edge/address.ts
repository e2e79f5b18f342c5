/** Listen addresses, shared by the gRPC and HTTP listeners. */
import { ErrorCode, invalidArgument, TelhaError } from '../core/errors.ts';

export function splitAddress(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(address.slice(at + 1)) };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Without tokens every caller is an operator, so only this machine may call: refuse any other address. */
export function assertLoopbackWhenOpen(open: boolean, field: string, address: string): void {
  if (open && !isLoopback(splitAddress(address).host)) {
    throw invalidArgument(
      field,
      `refusing to listen on ${address} without server.tokens: anyone who can reach it could read and change every tenant's jobs. Configure tokens, or bind 127.0.0.1.`,
    );
  }
}

/** `host:port` as a URL or a bind call wants it: an IPv6 host in brackets. */
export function joinAddress(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Node's `listen` failures (the HTTP listener's): the port taken, the address not ours, no right to bind. */
export function isListenError(error: unknown): error is NodeJS.ErrnoException {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL' || code === 'EACCES';
}

/**
 * grpc-js reports a failed bind as "No address added out of total 1 resolved errors: [listen
 * EADDRINUSE ...]", Node's `listen` as "listen EADDRINUSE: address already in use ..."; say which
 * address, and the likely reason when the port is taken.
 */
export function cannotListen(address: string, error: Error): TelhaError {
  const why = /EADDRINUSE/.test(error.message)
    ? 'the port is in use (another telha serve?)'
    : (/\[(.*)\]$/.exec(error.message)?.[1] ?? error.message);
  return new TelhaError(ErrorCode.FailedPrecondition, `cannot listen on ${address}: ${why}`, { cause: error });
}
