/** Each error class says its own name, so a stack trace or a log line tells which was thrown. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RemoteJob } from '../../src/client/convert.ts';
import { JobFailedError } from '../../src/client/watch.ts';
import { CorruptRecordError, ErrorCode, LeaseConflictError, TelhaError } from '../../src/core/errors.ts';
import { JobState } from '../../src/core/types.ts';

describe('error names', () => {
  it('names a TelhaError TelhaError', () => {
    assert.equal(new TelhaError(ErrorCode.NotFound, 'job x not found').name, 'TelhaError');
  });

  it('names each subclass by its own class, and keeps it a TelhaError', () => {
    const dead = { jobId: 'j1', state: JobState.Dead, events: [] } as unknown as RemoteJob;
    for (const error of [
      new JobFailedError(dead),
      new LeaseConflictError('j1', 'worker_mismatch', 'another worker holds it'),
      new CorruptRecordError('00', 'truncated'),
    ]) {
      assert.equal(error.name, error.constructor.name);
      assert.ok(error instanceof TelhaError);
      assert.ok(String(error).startsWith(`${error.constructor.name}: `), String(error));
    }
  });
});
