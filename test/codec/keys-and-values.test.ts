import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import {
  decodeJobKey,
  encodeJobKey,
  JOB_KEY_BYTES,
  jobIdToBytes,
  jobKeyOf,
  prefixUpperBound,
  rekey,
  SYSTEM_SCOPE_BYTES,
  tenantScopeBytes,
} from '../../src/codec/keys.ts';
import { parse as parseUuid } from 'uuid';
import { MsgpackWriter, msgpackKey } from '../../src/codec/msgpack-writer.ts';
import {
  decodeEntry,
  decodeRecord,
  encodeEntry,
  encodeRecord,
  encodeRecordAndEntry,
  VALUE_VERSION,
} from '../../src/codec/value.ts';
import { LOG_JOB_EVENTS, LOG_RESULT_BYTES, logEntryOf } from '../../src/core/transitions-log.ts';
import { CorruptRecordError } from '../../src/core/errors.ts';
import { EVENT_TRANSITIONS, JobState, type JobRecord } from '../../src/core/types.ts';

const JOB_ID = '01890a5d-ac96-774b-bcce-b302099a8057';

/** Golden bytes: if these change, stored data stops decoding. Change them only with a new VALUE_VERSION. */
const ACME_SCOPE_HEX = '4bfee1e8c44fa7d209b6d47bd9c3385d8ea7ab2a0dda0deaf92d51cfc0cb910f';
const GOLDEN_KEY_HEX =
  ACME_SCOPE_HEX +
  '00' + // state: Pending
  '07' + // priority
  '0006474846204001' + // created_at 1767225600000001 µs, big-endian
  '01890a5dac96774bbcceb302099a8057'; // job id
const GOLDEN_RECORD: JobRecord = {
  jobId: JOB_ID,
  tenant: 'acme',
  kind: 'email',
  payload: Buffer.from('hi'),
  priority: 7,
  createdAt: 1767225600000001,
  state: JobState.Leased,
  attempts: 1,
  leaseGeneration: 2,
  workerId: 'w1',
  leaseDeadline: 1767225630000001,
  notBefore: null,
  idempotencyKey: 'k',
  maxAttempts: 3,
  continuation: Buffer.from([1, 2]),
  events: [
    { at: 1767225600000001, transition: 'enqueued', detail: null },
    { at: 1767225600000002, transition: 'leased', detail: 'worker=w1 generation=2' },
  ],
  // Fields added later are written only when set: with them null the bytes are version 1's first layout.
  attemptDeadline: null,
  timeoutSecs: null,
  result: null,
  progress: null,
  traceContext: null,
  supersedeKey: null,
  supersededBy: null,
  debounceUntil: null,
};
const GOLDEN_VALUE_HEX =
  '01' + // VALUE_VERSION
  'de0010' + // map of 16 fields
  'a66a6f625f6964c41001890a5dac96774bbcceb302099a8057' + // job_id: bin 16
  'a674656e616e74a461636d65' + // tenant: "acme"
  'a46b696e64a5656d61696c' + // kind: "email"
  'a77061796c6f6164c4026869' + // payload: bin "hi"
  'a87072696f7269747907' + // priority: 7
  'aa637265617465645f6174d30006474846204001' + // created_at: int64
  'a5737461746501' + // state: 1 (Leased)
  'a8617474656d70747301' + // attempts: 1
  'b06c656173655f67656e65726174696f6e02' + // lease_generation: 2
  'a9776f726b65725f6964a27731' + // worker_id: "w1"
  'ae6c656173655f646561646c696e65d30006474847ea0381' + // lease_deadline
  'aa6e6f745f6265666f7265c0' + // not_before: nil
  'af6964656d706f74656e63795f6b6579a16b' + // idempotency_key: "k"
  'ac6d61785f617474656d70747303' + // max_attempts: 3
  'ac636f6e74696e756174696f6ec4020102' + // continuation: bin [1, 2]
  'a66576656e747392' + // events: array of 2
  '83a26174d30006474846204001aa7472616e736974696f6ea8656e717565756564a664657461696cc0' +
  '83a26174d30006474846204002aa7472616e736974696f6ea66c6561736564a664657461696cb6776f726b65723d77312067656e65726174696f6e3d32';

describe('key codec', () => {
  it('derives a tenant scope as documented: SHA-256 of the domain and the tenant id', () => {
    assert.equal(tenantScopeBytes('acme').toString('hex'), ACME_SCOPE_HEX);
  });

  it("encodes the spec's 58-byte key to the golden bytes and back", () => {
    const key = encodeJobKey({
      scope: tenantScopeBytes('acme'),
      state: JobState.Pending,
      priority: 7,
      createdAt: 1767225600000001,
      jobId: jobIdToBytes(JOB_ID),
    });
    assert.equal(key.length, JOB_KEY_BYTES);
    assert.equal(key.toString('hex'), GOLDEN_KEY_HEX);
    // The same bytes straight from a record (its state byte patched back to Pending).
    assert.equal(rekey(jobKeyOf(GOLDEN_RECORD), JobState.Pending).toString('hex'), GOLDEN_KEY_HEX);
    const decoded = decodeJobKey(key);
    assert.equal(decoded.scope.toString('hex'), ACME_SCOPE_HEX);
    assert.equal(decoded.state, JobState.Pending);
    assert.equal(decoded.priority, 7);
    assert.equal(decoded.createdAt, 1767225600000001);
    assert.equal(decoded.jobId, JOB_ID);
  });

  it('gives the system scope the nil prefix, which no tenant id maps to and every tenant sorts after', () => {
    assert.ok(SYSTEM_SCOPE_BYTES.equals(Buffer.alloc(32)));
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }), (tenant) => {
        const scope = tenantScopeBytes(tenant);
        return scope[0] !== 0 && Buffer.compare(SYSTEM_SCOPE_BYTES, scope) < 0;
      }),
    );
  });

  it('orders keys by (scope, state, priority, created_at, id) as unsigned bytes', () => {
    const part = fc.record({
      scope: fc.constantFrom(SYSTEM_SCOPE_BYTES, tenantScopeBytes('a'), tenantScopeBytes('b')),
      state: fc.constantFrom(...([0, 1, 2, 3, 4] as const)),
      priority: fc.integer({ min: 0, max: 255 }),
      createdAt: fc.oneof(
        fc.integer({ min: 0, max: 2 ** 32 + 5 }),
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      ),
      jobId: fc.uint8Array({ minLength: 16, maxLength: 16 }),
    });
    fc.assert(
      fc.property(part, part, (a, b) => {
        const tuple = (p: typeof a): (number | Buffer)[] => [
          Buffer.from(p.scope),
          p.state,
          p.priority,
          p.createdAt,
          Buffer.from(p.jobId),
        ];
        const ta = tuple(a);
        const tb = tuple(b);
        let expected = 0;
        for (let i = 0; i < ta.length && expected === 0; i++) {
          const x = ta[i] as number | Buffer;
          const y = tb[i] as number | Buffer;
          expected = typeof x === 'number' ? Math.sign(x - (y as number)) : Buffer.compare(x, y as Buffer);
        }
        return Math.sign(Buffer.compare(encodeJobKey(a), encodeJobKey(b))) === expected;
      }),
      { numRuns: 2_000 },
    );
  });

  it('rekeys by patching only the state byte', () => {
    const key = Buffer.from(GOLDEN_KEY_HEX, 'hex');
    const moved = rekey(key, JobState.Dead);
    assert.equal(moved[32], JobState.Dead);
    assert.ok(moved.subarray(0, 32).equals(key.subarray(0, 32)));
    assert.ok(moved.subarray(33).equals(key.subarray(33)));
    assert.equal(key[32], JobState.Pending, 'the original is untouched');
  });

  it('writes any UUID as the same 16 bytes as the uuid package parses, in either case', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.boolean(), (id, upper) => {
        const text = upper ? id.toUpperCase() : id;
        assert.deepEqual([...jobIdToBytes(text)], [...parseUuid(text)]);
        const key = jobKeyOf({ ...GOLDEN_RECORD, jobId: text });
        assert.equal(decodeJobKey(key).jobId, id.toLowerCase());
      }),
    );
    assert.throws(() => jobIdToBytes('not-a-uuid'));
  });

  it('bounds a prefix range from above', () => {
    assert.deepEqual(prefixUpperBound(Buffer.from([1, 2, 0xff])), Buffer.from([1, 3]));
    assert.equal(prefixUpperBound(Buffer.from([0xff, 0xff])), null);
  });
});

describe('value codec', () => {
  it('encodes a record as [VALUE_VERSION][msgpack map] with the golden bytes', () => {
    assert.equal(encodeRecord(GOLDEN_RECORD).toString('hex'), GOLDEN_VALUE_HEX);
    assert.equal(VALUE_VERSION, 1);
  });

  it('decodes the golden bytes to the record', () => {
    assert.deepEqual(decodeRecord(Buffer.from(GOLDEN_VALUE_HEX, 'hex'), 'k'), GOLDEN_RECORD);
  });

  it('reads fields added after the first layout, and absent ones as null', () => {
    const later = {
      ...GOLDEN_RECORD,
      attemptDeadline: 1767226200000001,
      timeoutSecs: 600,
      result: Buffer.from('{"sent":true}'),
      progress: '{"done":3,"of":10}',
    };
    const encoded = encodeRecord(later);
    assert.deepEqual(decodeRecord(encoded, 'k'), later);
    // The golden bytes (written before these fields existed) still read, with each one null.
    const old = decodeRecord(Buffer.from(GOLDEN_VALUE_HEX, 'hex'), 'k');
    assert.deepEqual([old.attemptDeadline, old.timeoutSecs, old.result, old.progress], [null, null, null, null]);
  });

  it('keeps an event name a newer version wrote instead of refusing the record', () => {
    const newer = {
      ...GOLDEN_RECORD,
      events: [...GOLDEN_RECORD.events, { at: 1767225600000003, transition: 'teleported', detail: 'x' }],
    };
    assert.deepEqual(decodeRecord(encodeRecord(newer), 'k').events.at(-1), {
      at: 1767225600000003,
      transition: 'teleported',
      detail: 'x',
    });
  });

  it('round-trips random records', () => {
    const record = fc.record({
      jobId: fc.uuid({ version: 7 }),
      tenant: fc.option(fc.string({ minLength: 1 })),
      kind: fc.string({ minLength: 1 }),
      payload: fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
      priority: fc.integer({ min: 0, max: 255 }),
      createdAt: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      state: fc.constantFrom(...([0, 1, 2, 4] as const)),
      attempts: fc.nat(),
      leaseGeneration: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      workerId: fc.option(fc.string({ minLength: 1 })),
      leaseDeadline: fc.option(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })),
      notBefore: fc.option(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })),
      idempotencyKey: fc.option(fc.string()),
      maxAttempts: fc.option(fc.integer({ min: 1, max: 1000 })),
      continuation: fc.option(fc.uint8Array({ maxLength: 16 }).map((a) => Buffer.from(a))),
      attemptDeadline: fc.option(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })),
      timeoutSecs: fc.option(fc.integer({ min: 1, max: 315_360_000 })),
      result: fc.option(fc.uint8Array({ maxLength: 16 }).map((a) => Buffer.from(a))),
      progress: fc.option(fc.string()),
      traceContext: fc.option(fc.record({ traceparent: fc.string(), tracestate: fc.option(fc.string()) })),
      supersedeKey: fc.option(fc.string()),
      supersededBy: fc.option(fc.uuid({ version: 7 })),
      debounceUntil: fc.option(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })),
      events: fc.array(
        fc.record({
          at: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
          transition: fc.constantFrom(...EVENT_TRANSITIONS),
          detail: fc.option(fc.string()),
        }),
        { maxLength: 5 },
      ),
    });
    fc.assert(
      fc.property(record, (r) => {
        // fast-check builds null-prototype objects; compare against plain copies.
        assert.deepEqual(decodeRecord(encodeRecord(r), 'k'), {
          ...r,
          events: r.events.map((e) => ({ ...e })),
          traceContext: r.traceContext === null ? null : { ...r.traceContext },
        });
      }),
      { numRuns: 300 },
    );
  });

  it('writes, for random records, the bytes msgpackr writes for the same map', () => {
    const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 300 }));
    const integer = fc.oneof(
      fc.constantFrom(0, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0xffff_ffff, 0x1_0000_0000, Number.MAX_SAFE_INTEGER),
      fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    );
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 40 }),
      fc.constantFrom(255, 256, 65_535, 65_536).map((n) => new Uint8Array(n).fill(7)),
    );
    const record = fc.record({
      jobId: fc.uuid({ version: 7 }),
      tenant: fc.option(text),
      kind: text,
      payload: bytes,
      priority: integer,
      createdAt: integer,
      state: fc.constantFrom(...([0, 1, 2, 3, 4, 5] as const)),
      attempts: integer,
      leaseGeneration: integer,
      workerId: fc.option(text),
      leaseDeadline: fc.option(integer),
      notBefore: fc.option(integer),
      idempotencyKey: fc.option(text),
      maxAttempts: fc.option(integer),
      continuation: fc.option(bytes),
      attemptDeadline: fc.option(integer),
      timeoutSecs: fc.option(integer),
      result: fc.option(bytes),
      progress: fc.option(text),
      traceContext: fc.option(fc.record({ traceparent: text, tracestate: fc.option(text) })),
      supersedeKey: fc.option(text),
      supersededBy: fc.option(fc.uuid({ version: 7 })),
      debounceUntil: fc.option(integer),
      events: fc.array(fc.record({ at: integer, transition: text, detail: fc.option(text) }), { maxLength: 20 }),
    });
    fc.assert(
      fc.property(record, (r) => {
        assert.ok(encodeRecord(r).equals(genericEncoding(r)));
      }),
      { numRuns: 500 },
    );
  });

  it('cuts a log entry from its record with the bytes the entry encodes to on its own', () => {
    const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a));
    const changes = fc.record({
      tenant: fc.option(fc.string({ unit: 'grapheme', maxLength: 20 })),
      kind: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
      payload: fc.oneof(
        bytes(40),
        fc.constantFrom(300, 70_000).map((n) => Buffer.alloc(n, 5)),
      ),
      continuation: fc.option(bytes(300)),
      // Either side of LOG_RESULT_BYTES, where the entry drops the result.
      result: fc.option(
        fc.constantFrom(0, 16, LOG_RESULT_BYTES, LOG_RESULT_BYTES + 1).map((n) => Buffer.alloc(n, 9)),
        { freq: 2 },
      ),
      progress: fc.option(fc.string({ maxLength: 20 })),
      traceContext: fc.option(fc.record({ traceparent: fc.string(), tracestate: fc.option(fc.string()) })),
      supersedeKey: fc.option(fc.string()),
      supersededBy: fc.option(fc.uuid({ version: 7 })),
      debounceUntil: fc.option(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })),
      // Completed, where an entry without the result says how big it was (0 for none).
      state: fc.constantFrom(JobState.Leased, JobState.Completed),
      // Up to twice LOG_JOB_EVENTS, where the entry keeps the last ones; an unlogged last event has no entry.
      events: fc.array(
        fc.record({
          at: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
          transition: fc.constantFrom(...EVENT_TRANSITIONS),
          detail: fc.option(fc.string({ maxLength: 20 })),
        }),
        { minLength: 1, maxLength: 2 * LOG_JOB_EVENTS },
      ),
    });
    let cut = 0;
    let cutWithSize = 0;
    fc.assert(
      fc.property(changes, (change) => {
        const record: JobRecord = { ...GOLDEN_RECORD, ...change };
        const entry = logEntryOf(record);
        if (entry === null) return;
        const { value, entryValue } = encodeRecordAndEntry(record, entry);
        assert.ok(value.equals(encodeRecord(record)));
        assert.equal(entryValue.toString('hex'), encodeEntry(entry).toString('hex'));
        assert.equal(decodeEntry(entryValue, 'entry').resultBytes, entry.resultBytes);
        if (entry.events.length === record.events.length && entry.result === record.result) {
          cut++;
          if (entry.resultBytes !== null) cutWithSize++;
        }
      }),
      { numRuns: 500 },
    );
    assert.ok(cut > 100, `${cut} entries took the cut`);
    assert.ok(cutWithSize > 10, `${cutWithSize} entries took the cut and said their result's size`);
  });

  it('writes every header size msgpackr writes, at each boundary', () => {
    const packr = new Packr({ useRecords: false, variableMapSize: true, int64AsType: 'number' });
    const w = new MsgpackWriter();
    const same = (write: () => void, value: unknown): void => {
      w.reset();
      write();
      assert.equal(w.take().toString('hex'), packr.pack(value).toString('hex'));
    };
    for (const n of [0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0xffff_ffff, 0x1_0000_0000, 2 ** 40 + 3]) {
      same(() => w.uint(n), n > 0xffff_ffff ? BigInt(n) : n);
    }
    for (const n of [0, 31, 32, 255, 256, 65_535, 65_536]) {
      same(() => w.str('x'.repeat(n)), 'x'.repeat(n));
      same(() => w.str('é'.repeat(n)), 'é'.repeat(n));
      same(() => w.bin(new Uint8Array(n)), new Uint8Array(n));
    }
    for (const n of [0, 15, 16, 65_535, 65_536]) {
      same(() => {
        w.arrayHeader(n);
        for (let i = 0; i < n; i++) w.nil();
      }, new Array<null>(n).fill(null));
      const map: Record<string, null> = {};
      for (let i = 0; i < n; i++) map[`k${i}`] = null;
      same(() => {
        w.mapHeader(n);
        for (let i = 0; i < n; i++) {
          w.str(`k${i}`);
          w.nil();
        }
      }, map);
    }
    same(() => w.key(msgpackKey('lease_generation')), 'lease_generation');
  });

  for (const [what, bytes] of [
    ['an empty value', Buffer.alloc(0)],
    ['an unknown version', Buffer.from('02' + GOLDEN_VALUE_HEX.slice(2), 'hex')],
    ['a truncated body', Buffer.from(GOLDEN_VALUE_HEX.slice(0, 40), 'hex')],
    ['a body that is not a map', Buffer.from('0192', 'hex')],
    ['an unknown state', Buffer.from(GOLDEN_VALUE_HEX.replace('a5737461746501', 'a5737461746509'), 'hex')],
    [
      'a wrong field type',
      Buffer.from(GOLDEN_VALUE_HEX.replace('a87072696f7269747907', 'a87072696f72697479a137'), 'hex'),
    ],
  ] as const) {
    it(`refuses ${what} with a typed error naming the key`, () => {
      assert.throws(
        () => decodeRecord(bytes, 'deadbeef'),
        (error: unknown) =>
          error instanceof CorruptRecordError && error.key === 'deadbeef' && error.message.includes('deadbeef'),
      );
    });
  }
});

/** A record as the generic packer writes it: the layout `encodeRecord` must reproduce byte for byte. */
function genericEncoding(record: JobRecord): Buffer {
  const packr = new Packr({ useRecords: false, variableMapSize: true, int64AsType: 'number' });
  const int = (n: number | null): number | bigint | null => (n !== null && n > 0xffff_ffff ? BigInt(n) : n);
  const body = packr.pack({
    job_id: jobIdToBytes(record.jobId),
    tenant: record.tenant,
    kind: record.kind,
    payload: record.payload,
    priority: int(record.priority),
    created_at: int(record.createdAt),
    state: record.state,
    attempts: int(record.attempts),
    lease_generation: int(record.leaseGeneration),
    worker_id: record.workerId,
    lease_deadline: int(record.leaseDeadline),
    not_before: int(record.notBefore),
    idempotency_key: record.idempotencyKey,
    max_attempts: int(record.maxAttempts),
    continuation: record.continuation,
    events: record.events.map((e) => ({ at: int(e.at), transition: e.transition, detail: e.detail })),
    ...(record.attemptDeadline === null ? {} : { attempt_deadline: int(record.attemptDeadline) }),
    ...(record.timeoutSecs === null ? {} : { timeout_secs: int(record.timeoutSecs) }),
    ...(record.result === null ? {} : { result: record.result }),
    ...(record.progress === null ? {} : { progress: record.progress }),
    ...(record.traceContext === null ? {} : { traceparent: record.traceContext.traceparent }),
    ...(record.traceContext?.tracestate == null ? {} : { tracestate: record.traceContext.tracestate }),
    ...(record.supersedeKey === null ? {} : { supersede_key: record.supersedeKey }),
    ...(record.supersededBy === null ? {} : { superseded_by: jobIdToBytes(record.supersededBy) }),
    ...(record.debounceUntil === null ? {} : { debounce_until: int(record.debounceUntil) }),
  });
  return Buffer.concat([Buffer.of(VALUE_VERSION), body]);
}
