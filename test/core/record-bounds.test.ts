/**
 * What the loader and the validators accept can always be stored and read back: every record
 * the encoder writes decodes to the same record, and no setting or job time within bounds can
 * make a transition produce one the encoder refuses.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { decodeRecord, encodeRecord } from '../../src/codec/value.ts';
import { makeConfig } from '../../src/core/config.ts';
import { draftJob } from '../../src/core/drafts.ts';
import { ErrorCode, isTelhaError, TelhaError } from '../../src/core/errors.ts';
import { MAX_ATTEMPTS_LIMIT, MAX_DURATION_SECS, MAX_TIMESTAMP_MICROS } from '../../src/core/bounds.ts';
import * as transitions from '../../src/core/transitions.ts';
import { JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { checkProgress } from '../../src/core/validate.ts';

const MAX_DURATION_MICROS = MAX_DURATION_SECS * 1_000_000;
/** The latest time a record may hold: a clock before MAX_TIMESTAMP_MICROS plus one bounded duration, twice over. */
const LATEST = MAX_TIMESTAMP_MICROS + 2 * MAX_DURATION_MICROS;

/** A plain copy, as a decoded record is (fast-check builds null-prototype objects). */
function plain(record: JobRecord): JobRecord {
  return { ...record, events: record.events.map((e) => ({ ...e })) };
}

function roundTrips(record: JobRecord): void {
  assert.deepEqual(decodeRecord(encodeRecord(record), 'k'), plain(record));
}

/** Integers a record's numeric fields might hold, in range and out: negative, fractional, past 2^53. */
const anyNumber = fc.oneof(
  fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  fc.integer({ min: 0, max: 0xffff_ffff }),
  fc.double({ noNaN: true }),
  fc.integer({ min: -1_000, max: -1 }),
  fc.constantFrom(2 ** 53, 2 ** 53 + 2, 1e16, 1e10 * 1e6 + Date.UTC(2026, 0, 1) * 1000, Infinity),
);
/** Any UTF-16 code unit, so lone surrogates and split pairs come up as often as anything else. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit));
/** Any UTF-16 text: whole characters (surrogate pairs among them) and stray code units. */
const anyText = fc.string({
  unit: fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), codeUnit),
  maxLength: 12,
});

/** A record whose fields may be anything of their type, in bounds or not. */
const wildRecord: fc.Arbitrary<JobRecord> = fc.record({
  jobId: fc.uuid({ version: 7 }),
  tenant: fc.option(anyText),
  kind: anyText,
  payload: fc.uint8Array({ maxLength: 16 }).map((a) => Buffer.from(a)),
  priority: fc.oneof(fc.integer({ min: 0, max: 255 }), anyNumber),
  createdAt: anyNumber,
  state: fc.constantFrom(JobState.Pending, JobState.Leased, JobState.Completed, JobState.Dead),
  attempts: anyNumber,
  leaseGeneration: anyNumber,
  workerId: fc.option(anyText),
  leaseDeadline: fc.option(anyNumber),
  notBefore: fc.option(anyNumber),
  idempotencyKey: fc.option(anyText),
  maxAttempts: fc.option(anyNumber),
  continuation: fc.option(fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a))),
  attemptDeadline: fc.option(anyNumber),
  timeoutSecs: fc.option(anyNumber),
  result: fc.option(fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a))),
  progress: fc.option(anyText),
  traceContext: fc.option(fc.record({ traceparent: anyText, tracestate: fc.option(anyText) }).map((c) => ({ ...c }))),
  supersedeKey: fc.option(anyText),
  supersededBy: fc.constant(null),
  debounceUntil: fc.option(anyNumber),
  events: fc.array(
    fc.record({
      at: anyNumber,
      transition: fc.constantFrom(...(['enqueued', 'leased', 'failed'] as const)),
      detail: fc.option(anyText),
    }),
    { maxLength: 3 },
  ),
});

/** Well-formed text: what the validators let into a record (the wire's UTF-8 cannot carry anything else). */
const text = (minLength: number): fc.Arbitrary<string> => fc.string({ unit: 'grapheme', minLength, maxLength: 12 });
/** A kind, worker id or idempotency key the validators accept: printable, no whitespace. */
const token = text(1)
  .map((s) => s.replace(/[\s\p{Cc}\p{Cf}]/gu, ''))
  .filter((s) => s.length > 0);
const time = fc.integer({ min: 0, max: LATEST });

/** A record whose every field is within the bounds a record can reach through the queue. */
const boundedRecord: fc.Arbitrary<JobRecord> = fc.record({
  jobId: fc.uuid({ version: 7 }),
  tenant: fc.option(text(1)),
  kind: text(1),
  payload: fc.uint8Array({ maxLength: 16 }).map((a) => Buffer.from(a)),
  priority: fc.integer({ min: 0, max: 255 }),
  createdAt: time,
  state: fc.constantFrom(JobState.Pending, JobState.Leased, JobState.Completed, JobState.Dead),
  attempts: fc.integer({ min: 0, max: MAX_ATTEMPTS_LIMIT }),
  leaseGeneration: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  workerId: fc.option(text(1)),
  leaseDeadline: fc.option(time),
  notBefore: fc.option(time),
  idempotencyKey: fc.option(text(1)),
  maxAttempts: fc.option(fc.integer({ min: 1, max: MAX_ATTEMPTS_LIMIT })),
  continuation: fc.option(fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a))),
  attemptDeadline: fc.option(time),
  timeoutSecs: fc.option(fc.integer({ min: 1, max: 315_360_000 })),
  result: fc.option(fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a))),
  progress: fc.option(text(0)),
  traceContext: fc.option(
    fc
      .record({
        traceparent: fc.constant('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
        tracestate: fc.option(text(1)),
      })
      .map((context) => ({ ...context })),
  ),
  supersedeKey: fc.option(text(1)),
  supersededBy: fc.option(fc.uuid({ version: 7 })),
  debounceUntil: fc.option(time),
  events: fc.array(
    fc.record({
      at: time,
      transition: fc.constantFrom(...(['enqueued', 'leased', 'failed'] as const)),
      detail: fc.option(text(0)),
    }),
    { maxLength: 3 },
  ),
});

/** An integer from `min` to `max`, often one of the two ends. */
const within = (min: number, max: number): fc.Arbitrary<number> =>
  fc.oneof(fc.constant(min), fc.constant(max), fc.integer({ min, max }));

/** Any configuration the loader accepts, as far as the transitions read it. */
const jobsConfig = fc.record({
  max_attempts: within(1, MAX_ATTEMPTS_LIMIT),
  backoff_base_secs: within(0, MAX_DURATION_SECS),
  backoff_factor: within(1, 1_000),
  backoff_cap_secs: within(0, MAX_DURATION_SECS),
  lease_ttl_secs: within(1, MAX_DURATION_SECS),
});

describe('records within bounds', () => {
  it('decodes whatever the encoder accepts to the same record, and refuses the rest before writing', () => {
    fc.assert(
      fc.property(wildRecord, (record) => {
        let bytes: Buffer;
        try {
          bytes = encodeRecord(record);
        } catch (error) {
          assert.ok(isTelhaError(error, ErrorCode.Internal), String(error));
          return;
        }
        assert.deepEqual(decodeRecord(bytes, 'k'), plain(record));
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses to encode a time past 2^53 µs, naming the job and the field', () => {
    const record = fc.sample(boundedRecord, { numRuns: 1, seed: 1 })[0] as JobRecord;
    // What a 1e10-second lease taken in 2026 would have written: it decodes as a rounded float.
    const deadline = Date.UTC(2026, 0, 1) * 1000 + 1e10 * 1e6;
    assert.throws(
      () => encodeRecord({ ...record, state: JobState.Leased, leaseDeadline: deadline }),
      (error: unknown) =>
        error instanceof TelhaError &&
        error.code === ErrorCode.Internal &&
        error.message.includes(record.jobId) &&
        error.message.includes('lease_deadline'),
    );
  });

  it('refuses to encode text with a lone surrogate, which would read back as U+FFFD', () => {
    const record = fc.sample(boundedRecord, { numRuns: 1, seed: 2 })[0] as JobRecord;
    assert.throws(() => encodeRecord({ ...record, kind: 'a\ud800' }), /kind/);
  });

  it('refuses a per-kind backoff past ten years at load, naming the kind', () => {
    assert.throws(
      () => makeConfig({ jobs: { kinds: { slow: { backoff_base_secs: 1e10 } } } }),
      (error: unknown) =>
        isTelhaError(error, ErrorCode.InvalidArgument) && error.field === 'jobs.kinds.slow.backoff_base_secs',
    );
  });

  it('round-trips every record whose fields are within the bounds the queue keeps', () => {
    fc.assert(fc.property(boundedRecord, roundTrips), { numRuns: 1_000 });
  });

  it('reads back every record the transitions make, for any configuration the loader accepts and any valid job', () => {
    const job = fc.record(
      {
        kind: token,
        priority: fc.integer({ min: 0, max: 255 }),
        notBefore: within(0, MAX_TIMESTAMP_MICROS),
        delayMs: within(0, MAX_DURATION_SECS * 1_000),
        maxAttempts: within(1, MAX_ATTEMPTS_LIMIT),
        idempotencyKey: token,
      },
      { requiredKeys: ['kind'] },
    );
    // The job's kind's own table, with any of the keys that reach a record.
    const kindTable = fc.option(
      fc.record(
        {
          backoff_base_secs: within(0, MAX_DURATION_SECS),
          backoff_cap_secs: within(0, MAX_DURATION_SECS),
          backoff_factor: within(1, 1_000),
          max_attempts: within(1, MAX_ATTEMPTS_LIMIT),
          timeout_secs: within(1, MAX_DURATION_SECS),
        },
        { requiredKeys: [] },
      ),
    );
    fc.assert(
      fc.property(
        jobsConfig,
        job,
        kindTable,
        within(0, MAX_TIMESTAMP_MICROS),
        token,
        // A handler's error: any text, cut to 1,024 characters in the event, perhaps inside a surrogate pair.
        fc.oneof(
          fc.string({
            unit: fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), codeUnit),
            maxLength: 40,
          }),
          // Long enough to be cut at 1,024 characters, there or one place off a surrogate pair.
          fc
            .tuple(fc.integer({ min: 1_000, max: 1_030 }), fc.boolean())
            .map(([n, pair]) => 'x'.repeat(n) + (pair ? '😀'.repeat(20) : '\ud800')),
        ),
        // Progress a worker reports: JSON, a string of any text as JSON, or text the queue refuses.
        fc.oneof(
          fc.json({ maxDepth: 2 }),
          anyText.map((t) => JSON.stringify(t)),
          anyText,
        ),
        fc.uint8Array({ maxLength: 64 }),
        (jobs, newJob, override, now, workerId, error, progress, result) => {
          const config = makeConfig({ jobs: { ...jobs, kinds: override === null ? {} : { [newJob.kind]: override } } });
          const policy = { config: config.jobs };
          const draft = draftJob(tenantScope('acme'), newJob, {
            now,
            fieldPrefix: '',
            maxPayloadBytes: config.jobs.max_payload_bytes,
            jobId: '01890a5d-ac96-774b-bcce-b302099a8057',
          });
          const records: JobRecord[] = [];
          const keep = (record: JobRecord): JobRecord => {
            records.push(record);
            return record;
          };
          const at = Math.max(now, draft.notBefore ?? 0);
          let record = keep(transitions.enqueue({ ...draft, createdAt: now }, now));
          record = keep(transitions.lease(record, workerId, at, policy));
          const fence = { workerId, leaseGeneration: record.leaseGeneration };
          record = keep(transitions.heartbeat(record, fence, at, policy));
          record = keep(transitions.checkpoint(record, fence, Buffer.from('cp'), at, policy));
          const accepted = acceptedProgress(progress);
          if (accepted !== null) record = keep(transitions.heartbeat(record, fence, at, policy, accepted));
          keep(transitions.complete(record, fence, at, Buffer.from(result)));
          // Far into the attempts, so the backoff is at its cap.
          record = { ...record, attempts: Math.min(60, effectiveLast(record, policy)) };
          record = keep(transitions.fail(record, fence, { error, permanent: false }, at, policy));
          if (record.state === JobState.Pending) {
            const again = Math.max(at, record.notBefore ?? 0);
            record = keep(transitions.lease(record, workerId, again, policy));
            record = keep(transitions.reap(record, record.leaseDeadline ?? again, policy));
          }
          for (const r of records) roundTrips(r);
        },
      ),
      { numRuns: 500 },
    );
  });
});

/** Progress as the queue stores it, or `null` when the queue refuses it. */
function acceptedProgress(progress: string): string | null {
  try {
    return checkProgress(progress);
  } catch {
    return null;
  }
}

/** One attempt short of the ceiling, so a fail retries instead of dead-lettering. */
function effectiveLast(record: JobRecord, policy: transitions.RetryPolicy): number {
  return Math.max(0, transitions.effectiveMaxAttempts(record, policy) - 2);
}
