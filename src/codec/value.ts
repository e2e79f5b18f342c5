/**
 * The value envelope: `[VALUE_VERSION 1 byte][msgpack JobRecord]`.
 *
 * The record is a msgpack map with snake_case field names (docs/design.md lists them), integers
 * as msgpack integers (timestamps as 64-bit ints), ids and opaque bytes as bin, so a
 * reader in any language can decode it. Decoding checks every field and turns
 * anything unexpected into a {@link CorruptRecordError} naming the key.
 */
import { Packr } from 'msgpackr';
import { CorruptRecordError, ErrorCode, TelhaError } from '../core/errors.ts';
import { logEntryOf, type LogRecord } from '../core/transitions-log.ts';
import { isJobState, type JobEvent, type JobRecord, type TraceContext } from '../core/types.ts';
import { JOB_ID_BYTES, jobIdFromBytes, writeJobId } from './keys.ts';
import { MsgpackWriter, msgpackKey } from './msgpack-writer.ts';

/** Version 1: the layout documented above. Bump it, and keep a decoder for every older version, when it changes. */
export const VALUE_VERSION = 1;

const packr = new Packr({ useRecords: false, variableMapSize: true, int64AsType: 'number' });

/**
 * A record the decoder would refuse, or read back different, must never be written: the row
 * would be stuck (a Leased job whose deadline reads as corrupt is counted but never reaped).
 * Validation keeps every input within bounds; this is the last check, and a failure is a bug.
 */
function unwritable(record: JobRecord, field: string, what: string): TelhaError {
  return new TelhaError(
    ErrorCode.Internal,
    `job ${record.jobId}: refusing to write a record that would not read back: field ${field} ${what}`,
  );
}

/**
 * An unsigned integer field, checked: past 2^53 a double is no longer exact and would decode
 * rounded. The writer stores one above 2^32 as a 64-bit integer, never as a float.
 */
function u64(record: JobRecord, field: string, value: number): number {
  // What the decoder's isUint accepts, and nothing else.
  if (!Number.isSafeInteger(value) || value < 0 || Object.is(value, -0)) {
    throw unwritable(record, field, `is ${value}, not an integer from 0 to 2^53 - 1`);
  }
  return value;
}

function optionalU64(record: JobRecord, field: string, value: number | null): number | null {
  return value === null ? null : u64(record, field, value);
}

/** Text as msgpack's UTF-8 carries it: a lone surrogate would come back as U+FFFD. */
function text<T extends string | null>(record: JobRecord, field: string, value: T): T {
  if (value !== null && !value.isWellFormed()) throw unwritable(record, field, 'holds a lone UTF-16 surrogate');
  return value;
}

/** The record's map keys (the events' too), ready to copy. */
const KEY_NAMES = [
  'job_id',
  'tenant',
  'kind',
  'payload',
  'priority',
  'created_at',
  'state',
  'attempts',
  'lease_generation',
  'worker_id',
  'lease_deadline',
  'not_before',
  'idempotency_key',
  'max_attempts',
  'continuation',
  'events',
  'at',
  'transition',
  'detail',
  'attempt_deadline',
  'timeout_secs',
  'result',
  'progress',
  'traceparent',
  'tracestate',
  'result_bytes',
  'supersede_key',
  'superseded_by',
  'debounce_until',
] as const;
const KEYS = Object.fromEntries(KEY_NAMES.map((name) => [name, msgpackKey(name)])) as Readonly<
  Record<(typeof KEY_NAMES)[number], Buffer>
>;

const writer = new MsgpackWriter();

/** Where a record's payload and continuation values sit in its stored bytes (see `encodeRecordAndEntry`). */
interface ValueSpans {
  payloadAt: number;
  payloadEnd: number;
  continuationAt: number;
  continuationEnd: number;
}

/**
 * The stored value of `record`. Field by field, in a fixed order, with the bytes msgpackr writes
 * for the same map (the codec tests compare the two): every transition encodes the whole record,
 * and a generic packer pays for finding out its shape each time.
 */
export function encodeRecord(record: JobRecord): Buffer {
  return writeRecord(record, null, null);
}

/**
 * The stored value of a transitions-log entry: its job's, and, after every field a record has,
 * `result_bytes` when the entry says what result it does not carry (`LogRecord.resultBytes`). An
 * entry without it is byte for byte what entries always were, and a reader that does not know the
 * key (an older server) passes over it.
 */
export function encodeEntry(entry: LogRecord): Buffer {
  return writeRecord(entry, null, entry.resultBytes);
}

/**
 * `encodeRecord`, noting in `spans`, when given, where the payload and the continuation went, with
 * a log entry's `resultBytes` when not `null`.
 */
function writeRecord(record: JobRecord, spans: ValueSpans | null, resultBytes: number | null): Buffer {
  const w = writer;
  w.reset();
  w.byte(VALUE_VERSION);
  const optional =
    (record.attemptDeadline === null ? 0 : 1) +
    (record.timeoutSecs === null ? 0 : 1) +
    (record.result === null ? 0 : 1) +
    (record.progress === null ? 0 : 1) +
    (record.traceContext === null ? 0 : record.traceContext.tracestate === null ? 1 : 2) +
    (record.supersedeKey === null ? 0 : 1) +
    (record.supersededBy === null ? 0 : 1) +
    (record.debounceUntil === null ? 0 : 1) +
    (resultBytes === null ? 0 : 1);
  w.mapHeader(16 + optional);
  w.key(KEYS.job_id);
  w.binWith(JOB_ID_BYTES, (target, offset) => writeJobId(target, record.jobId, offset));
  w.key(KEYS.tenant);
  w.str(text(record, 'tenant', record.tenant));
  w.key(KEYS.kind);
  w.str(text(record, 'kind', record.kind));
  w.key(KEYS.payload);
  if (spans !== null) spans.payloadAt = w.position;
  w.bin(record.payload);
  if (spans !== null) spans.payloadEnd = w.position;
  w.key(KEYS.priority);
  w.uint(u64(record, 'priority', record.priority));
  w.key(KEYS.created_at);
  w.uint(u64(record, 'created_at', record.createdAt));
  w.key(KEYS.state);
  w.uint(u64(record, 'state', record.state));
  w.key(KEYS.attempts);
  w.uint(u64(record, 'attempts', record.attempts));
  w.key(KEYS.lease_generation);
  w.uint(u64(record, 'lease_generation', record.leaseGeneration));
  w.key(KEYS.worker_id);
  w.str(text(record, 'worker_id', record.workerId));
  w.key(KEYS.lease_deadline);
  w.uint(optionalU64(record, 'lease_deadline', record.leaseDeadline));
  w.key(KEYS.not_before);
  w.uint(optionalU64(record, 'not_before', record.notBefore));
  w.key(KEYS.idempotency_key);
  w.str(text(record, 'idempotency_key', record.idempotencyKey));
  w.key(KEYS.max_attempts);
  w.uint(optionalU64(record, 'max_attempts', record.maxAttempts));
  w.key(KEYS.continuation);
  if (spans !== null) spans.continuationAt = w.position;
  w.bin(record.continuation);
  if (spans !== null) spans.continuationEnd = w.position;
  w.key(KEYS.events);
  w.arrayHeader(record.events.length);
  for (const e of record.events) {
    w.mapHeader(3);
    w.key(KEYS.at);
    w.uint(u64(record, 'events.at', e.at));
    w.key(KEYS.transition);
    w.str(text(record, 'events.transition', e.transition));
    w.key(KEYS.detail);
    w.str(text(record, 'events.detail', e.detail));
  }
  // Written only when set, so a record without them is byte for byte what version 1 always wrote.
  if (record.attemptDeadline !== null) {
    w.key(KEYS.attempt_deadline);
    w.uint(u64(record, 'attempt_deadline', record.attemptDeadline));
  }
  if (record.timeoutSecs !== null) {
    w.key(KEYS.timeout_secs);
    w.uint(u64(record, 'timeout_secs', record.timeoutSecs));
  }
  if (record.result !== null) {
    w.key(KEYS.result);
    w.bin(record.result);
  }
  if (record.progress !== null) {
    w.key(KEYS.progress);
    w.str(text(record, 'progress', record.progress));
  }
  // The trace context as its two headers, so a reader in any language hands them to its propagator.
  if (record.traceContext !== null) {
    w.key(KEYS.traceparent);
    w.str(text(record, 'traceparent', record.traceContext.traceparent));
    if (record.traceContext.tracestate !== null) {
      w.key(KEYS.tracestate);
      w.str(text(record, 'tracestate', record.traceContext.tracestate));
    }
  }
  if (record.supersedeKey !== null) {
    w.key(KEYS.supersede_key);
    w.str(text(record, 'supersede_key', record.supersedeKey));
  }
  if (record.supersededBy !== null) {
    const successor = record.supersededBy;
    w.key(KEYS.superseded_by);
    w.binWith(JOB_ID_BYTES, (target, offset) => writeJobId(target, successor, offset));
  }
  if (record.debounceUntil !== null) {
    w.key(KEYS.debounce_until);
    w.uint(u64(record, 'debounce_until', record.debounceUntil));
  }
  // Last, after every field a record has: an entry cut from its record appends it (`resultBytesField`).
  if (resultBytes !== null) {
    w.key(KEYS.result_bytes);
    w.uint(u64(record, 'result_bytes', resultBytes));
  }
  return w.take();
}

/** The msgpack of a log entry's `result_bytes`, key and value: what an entry cut from its record adds at its end. */
function resultBytesField(record: JobRecord, resultBytes: number): Buffer {
  const w = writer;
  w.reset();
  w.key(KEYS.result_bytes);
  w.uint(u64(record, 'result_bytes', resultBytes));
  return w.take();
}

/**
 * The stored values of `record` and of `entry`, its transitions-log entry (`logEntryOf(record)`).
 * An entry is the record with the payload emptied and the continuation dropped, and, for a job of
 * many events or a large result, those trimmed too: when they are not, the entry's bytes are the
 * record's with two values replaced, cut from them rather than encoded again (every transition
 * writes both; the codec tests compare the cut with the entry encoded on its own).
 */
export function encodeRecordAndEntry(record: JobRecord, entry: LogRecord): { value: Buffer; entryValue: Buffer } {
  const spans: ValueSpans = { payloadAt: 0, payloadEnd: 0, continuationAt: 0, continuationEnd: 0 };
  const value = writeRecord(record, spans, null);
  if (entry.events.length !== record.events.length || entry.result !== record.result) {
    return { value, entryValue: encodeEntry(entry) };
  }
  const { payloadAt, payloadEnd, continuationAt, continuationEnd } = spans;
  const middle = continuationAt - payloadEnd;
  // A completed job without a result: its entry says so in one more field, at the end.
  const tail = entry.resultBytes === null ? null : resultBytesField(record, entry.resultBytes);
  const entryValue = Buffer.allocUnsafe(
    payloadAt + 2 + middle + 1 + (value.length - continuationEnd) + (tail?.length ?? 0),
  );
  value.copy(entryValue, 0, 0, payloadAt);
  let at = payloadAt;
  entryValue[at++] = 0xc4; // an empty bin: the payload
  entryValue[at++] = 0x00;
  value.copy(entryValue, at, payloadEnd, continuationAt);
  at += middle;
  entryValue[at++] = 0xc0; // nil: the continuation
  at += value.copy(entryValue, at, continuationEnd);
  if (tail !== null) {
    // A record has 16 fields and more, so its map header is always map16 (0xde, a 16-bit count).
    entryValue.writeUInt16BE(value.readUInt16BE(2) + 1, 2);
    tail.copy(entryValue, at);
  }
  return { value, entryValue };
}

/** A transitions-log entry (`logEntryOf`) and its stored value. */
export interface EncodedEntry {
  readonly record: LogRecord;
  readonly value: Buffer;
}

/**
 * What a write of `record` stores: its value, and, when the store keeps the transitions log
 * (`log`) and the write is a transition a watcher sees, its log entry with the entry's value
 * (cut from the record's bytes, `encodeRecordAndEntry`). Throws for a record that would not read back.
 */
export function encodeWrite(record: JobRecord, log: boolean): { value: Buffer; entry: EncodedEntry | null } {
  const entry = log ? logEntryOf(record) : null;
  if (entry === null) return { value: encodeRecord(record), entry: null };
  const { value, entryValue } = encodeRecordAndEntry(record, entry);
  return { value, entry: { record: entry, value: entryValue } };
}

/**
 * Decode a stored value. `keyHex` names the row in the error, so an operator can
 * find it; callers that scan skip such rows and count them.
 */
export function decodeRecord(value: Uint8Array, keyHex: string): JobRecord {
  return readRecord(unpackValue(value, keyHex), keyHex);
}

/** Decode a stored transitions-log entry (`encodeEntry`): its job, and `result_bytes` where it has one. */
export function decodeEntry(value: Uint8Array, keyHex: string): LogRecord {
  const raw = unpackValue(value, keyHex);
  const record = readRecord(raw, keyHex);
  const stored = raw['result_bytes'];
  if (stored !== undefined && !isUint(stored))
    throw new CorruptRecordError(keyHex, 'field result_bytes is not an integer');
  return { ...record, resultBytes: stored ?? null };
}

/** The msgpack map of a stored value, its version checked. */
function unpackValue(value: Uint8Array, keyHex: string): Record<string, unknown> {
  if (value.byteLength === 0) throw new CorruptRecordError(keyHex, 'empty value');
  const version = value[0];
  if (version !== VALUE_VERSION) throw new CorruptRecordError(keyHex, `unknown value version ${version}`);
  let raw: unknown;
  try {
    raw = packr.unpack(value.subarray(1));
  } catch (cause) {
    throw new CorruptRecordError(keyHex, 'msgpack body does not decode', cause);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new CorruptRecordError(keyHex, 'body is not a map');
  }
  return raw as Record<string, unknown>;
}

function readRecord(r: Record<string, unknown>, keyHex: string): JobRecord {
  const field = <T>(name: string, check: (v: unknown) => v is T, expected: string): T => {
    const v = r[name];
    if (!check(v)) throw new CorruptRecordError(keyHex, `field ${name} is not ${expected}`);
    return v;
  };
  const jobIdBytes = field('job_id', isBytes, 'bytes');
  if (jobIdBytes.byteLength !== 16) throw new CorruptRecordError(keyHex, 'field job_id is not 16 bytes');
  const state = field('state', isUint, 'an integer');
  if (!isJobState(state)) throw new CorruptRecordError(keyHex, `field state has unknown value ${state}`);
  const events = field('events', Array.isArray, 'an array').map((e: unknown): JobEvent => {
    if (typeof e !== 'object' || e === null) throw new CorruptRecordError(keyHex, 'an event is not a map');
    const ev = e as Record<string, unknown>;
    // An event name this version does not know (a newer one wrote it) is kept as it is.
    if (!isUint(ev['at']) || typeof ev['transition'] !== 'string' || ev['transition'] === '') {
      throw new CorruptRecordError(keyHex, 'an event is malformed');
    }
    const detail = ev['detail'];
    if (detail !== null && typeof detail !== 'string')
      throw new CorruptRecordError(keyHex, 'an event detail is malformed');
    return { at: ev['at'], transition: ev['transition'], detail };
  });
  return {
    jobId: jobIdFromBytes(jobIdBytes),
    tenant: field('tenant', isStringOrNull, 'a string or nil'),
    kind: field('kind', isString, 'a string'),
    payload: field('payload', isBytes, 'bytes'),
    priority: field('priority', isUint, 'an integer'),
    createdAt: field('created_at', isUint, 'an integer'),
    state,
    attempts: field('attempts', isUint, 'an integer'),
    leaseGeneration: field('lease_generation', isUint, 'an integer'),
    workerId: field('worker_id', isStringOrNull, 'a string or nil'),
    leaseDeadline: field('lease_deadline', isUintOrNull, 'an integer or nil'),
    notBefore: field('not_before', isUintOrNull, 'an integer or nil'),
    idempotencyKey: field('idempotency_key', isStringOrNull, 'a string or nil'),
    maxAttempts: field('max_attempts', isUintOrNull, 'an integer or nil'),
    continuation: field('continuation', isBytesOrNull, 'bytes or nil'),
    events,
    ...optionalFields(r, keyHex),
  };
}

/** Fields added after version 1's first layout, written only when set: absent reads as `null`. */
function optionalFields(
  r: Record<string, unknown>,
  keyHex: string,
): Pick<
  JobRecord,
  | 'attemptDeadline'
  | 'timeoutSecs'
  | 'result'
  | 'progress'
  | 'traceContext'
  | 'supersedeKey'
  | 'supersededBy'
  | 'debounceUntil'
> {
  const read = <T>(name: string, check: (v: unknown) => v is T, expected: string): T | null => {
    const v = r[name];
    if (v === undefined || v === null) return null;
    if (!check(v)) throw new CorruptRecordError(keyHex, `field ${name} is not ${expected}`);
    return v;
  };
  return {
    attemptDeadline: read('attempt_deadline', isUint, 'an integer'),
    timeoutSecs: read('timeout_secs', isUint, 'an integer'),
    result: read('result', isBytes, 'bytes'),
    progress: read('progress', isString, 'a string'),
    traceContext: readTraceContext(read('traceparent', isString, 'a string'), read('tracestate', isString, 'a string')),
    supersedeKey: read('supersede_key', isString, 'a string'),
    supersededBy: readJobId(read('superseded_by', isBytes, 'bytes'), 'superseded_by', keyHex),
    debounceUntil: read('debounce_until', isUint, 'an integer'),
  };
}

function readJobId(bytes: Uint8Array | null, name: string, keyHex: string): string | null {
  if (bytes === null) return null;
  if (bytes.byteLength !== JOB_ID_BYTES) throw new CorruptRecordError(keyHex, `field ${name} is not 16 bytes`);
  return jobIdFromBytes(bytes);
}

function readTraceContext(traceparent: string | null, tracestate: string | null): TraceContext | null {
  return traceparent === null ? null : { traceparent, tracestate };
}

export function isString(v: unknown): v is string {
  return typeof v === 'string';
}
export function isStringOrNull(v: unknown): v is string | null {
  return v === null || typeof v === 'string';
}
export function isUint(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}
export function isUintOrNull(v: unknown): v is number | null {
  return v === null || isUint(v);
}
export function isBytes(v: unknown): v is Uint8Array {
  return v instanceof Uint8Array;
}
function isBytesOrNull(v: unknown): v is Uint8Array | null {
  return v === null || v instanceof Uint8Array;
}
