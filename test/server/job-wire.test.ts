/**
 * A job record as the wire carries it: built as the message itself (see `jobToWire`), it must
 * encode what it holds, leave every unset optional field off the wire, and come back as the
 * same record through the client's conversion.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { jobFromWire } from '../../src/client/convert.ts';
import { enqueue } from '../../src/core/transitions.ts';
import { JobState, type JobRecord } from '../../src/core/types.ts';
import { JobSchema } from '../../src/gen/telha/v1/queue_pb.ts';
import { jobToWire } from '../../src/server/convert.ts';

const NOW = 1_764_000_000_000_000;

/** A system job just enqueued: every optional field unset. */
const bare: JobRecord = enqueue(
  {
    jobId: '01a234d7-88a5-73aa-bbbb-0123456789ab',
    tenant: null,
    kind: 'system:prune',
    payload: new Uint8Array(0),
    priority: 0,
    createdAt: NOW,
    notBefore: null,
    idempotencyKey: null,
    maxAttempts: null,
    timeoutSecs: null,
  },
  NOW,
);

const full: JobRecord = {
  ...bare,
  tenant: 'acme',
  kind: 'email',
  payload: new Uint8Array([1, 2, 3]),
  priority: 7,
  state: JobState.Leased,
  attempts: 2,
  leaseGeneration: 3,
  workerId: 'worker-1',
  leaseDeadline: NOW + 30_000_000,
  notBefore: NOW + 1_000_000,
  idempotencyKey: 'order-42',
  // Zero and empty values that are set must stay set, not read back as absent.
  maxAttempts: 0,
  continuation: new Uint8Array(0),
  events: [...bare.events, { at: NOW + 2_000_000, transition: 'leased', detail: 'worker-1' }],
  attemptDeadline: NOW + 60_000_000,
  timeoutSecs: 60,
  result: new Uint8Array([9]),
  progress: '',
};

function roundTrip(record: JobRecord): ReturnType<typeof jobFromWire> {
  return jobFromWire(fromBinary(JobSchema, toBinary(JobSchema, jobToWire(record, 5))));
}

describe('a job on the wire', () => {
  it('comes back as the same record, every optional field set, zero values included', () => {
    assert.deepEqual(roundTrip(full), { ...full, effectiveMaxAttempts: 5 });
  });

  it('leaves every unset optional field off the wire', () => {
    assert.deepEqual(roundTrip(bare), { ...bare, effectiveMaxAttempts: 5 });
    const decoded = fromBinary(JobSchema, toBinary(JobSchema, jobToWire(bare, 5)));
    for (const field of ['workerId', 'leaseDeadlineUs', 'maxAttempts', 'continuation', 'result', 'progress'] as const) {
      assert.equal(decoded[field], undefined, field);
    }
    assert.equal(decoded.events[0]?.detail, undefined);
  });
});
