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

/** Assert that `promise` rejects with a TelhaError of `code`, its message starting with `field:` when given. */
export async function rejectsWith(promise: Promise<unknown>, code: ErrorCode, field?: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof TelhaError, String(error));
    assert.equal(error.code, code, error.message);
    if (field !== undefined) assert.match(error.message, new RegExp(`^${field.replace('.', '\\.')}:`));
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
