import assert from 'node:assert/strict';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';

/** Assert that `run` throws an `invalid_argument` TelhaError naming `field`, its message matching `message`. */
export function refuses(run: () => unknown, field: string, message: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof TelhaError, String(error));
    assert.equal(error.code, ErrorCode.InvalidArgument);
    assert.equal(error.field, field);
    assert.match(error.message, message);
    return true;
  });
}

/**
 * Assert that `promise` rejects with a TelhaError of `code`. `check` is the field its message must
 * start with (`field:`), or a function given the error for further assertions.
 */
export async function rejectsWith(
  promise: Promise<unknown>,
  code: ErrorCode,
  check?: string | ((error: TelhaError) => void),
): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof TelhaError, String(error));
    assert.equal(error.code, code, error.message);
    if (typeof check === 'string') assert.match(error.message, new RegExp(`^${check.replace('.', '\\.')}:`));
    else check?.(error);
    return true;
  });
}

/** Bearer tokens the server tests configure, one per role (two tenants). */
export const TOKENS = {
  acme: 'acme-token-0123456789',
  globex: 'globex-token-0123456789',
  worker: 'worker-token-0123456789',
  operator: 'operator-token-0123456789',
};

/** The `server.tokens` entries for {@link TOKENS}: two tenants, a worker fleet and an operator. */
export const TOKEN_ROLES = [
  { token: TOKENS.acme, role: 'tenant', tenant: 'acme' },
  { token: TOKENS.globex, role: 'tenant', tenant: 'globex' },
  { token: TOKENS.worker, role: 'worker', name: 'fleet' },
  { token: TOKENS.operator, role: 'operator', name: 'ops' },
] as const;
