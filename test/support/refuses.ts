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
