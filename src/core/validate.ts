/**
 * Input checks shared by every entry point. Each failure is an
 * `invalid_argument` error naming the field; callers validate before writing,
 * so bad input changes nothing.
 */
import { invalidArgument } from './errors.ts';
import {
  MAX_TRACEPARENT_CHARS,
  MAX_TRACESTATE_CHARS,
  MAX_IDEMPOTENCY_KEY_BYTES,
  MAX_KIND_BYTES,
  MAX_PROGRESS_CHARS,
  MAX_SCHEDULE_NAME_BYTES,
  MAX_SUPERSEDE_KEY_BYTES,
  MAX_ORDER_KEY_BYTES,
  MAX_TENANT_BYTES,
  MAX_TIMESTAMP_MICROS,
  MAX_WORKER_ID_BYTES,
  SYSTEM_KIND_PREFIX,
} from './bounds.ts';
import type { LeaseFence, Micros, QueueScope, TraceContext } from './types.ts';

const encoder = new TextEncoder();

export function utf8Length(text: string): number {
  // Fast path: pure ASCII is the common case and needs no encoding.
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(text)) return text.length;
  return encoder.encode(text).length;
}

/** Printable and free of whitespace: safe in keys, logs and CLI output. */
const TOKEN_PATTERN = /^[^\s\p{Cc}\p{Cf}]+$/u;

/**
 * Text is stored as UTF-8, which has no encoding for a lone UTF-16 surrogate: it would be stored
 * as U+FFFD and read back different (and two keys differing only there would collide).
 */
function checkWellFormed(field: string, value: string): void {
  if (!value.isWellFormed()) throw invalidArgument(field, 'must be well-formed Unicode (it holds a lone surrogate)');
}

export function checkToken(field: string, value: unknown, maxBytes: number): string {
  if (typeof value !== 'string') throw invalidArgument(field, 'must be a string');
  if (value.length === 0) throw invalidArgument(field, 'must not be empty');
  checkWellFormed(field, value);
  if (utf8Length(value) > maxBytes) throw invalidArgument(field, `must be at most ${maxBytes} bytes`);
  if (!TOKEN_PATTERN.test(value)) throw invalidArgument(field, 'must not contain whitespace or control characters');
  return value;
}

export function checkTenant(tenant: unknown, field = 'tenant'): string {
  return checkToken(field, tenant, MAX_TENANT_BYTES);
}

/** A schedule's name: 1-128 bytes, no whitespace; unique within its scope. */
export function checkScheduleName(name: unknown, field = 'name'): string {
  return checkToken(field, name, MAX_SCHEDULE_NAME_BYTES);
}

export function checkWorkerId(workerId: unknown, field = 'worker_id'): string {
  return checkToken(field, workerId, MAX_WORKER_ID_BYTES);
}

/** A kind: 1-255 bytes; `system:` kinds live in the system scope and only there. */
export function checkKind(kind: unknown, scope: QueueScope, field = 'kind'): string {
  const value = checkToken(field, kind, MAX_KIND_BYTES);
  const isSystemKind = value.startsWith(SYSTEM_KIND_PREFIX);
  if (scope.type === 'system' && !isSystemKind) {
    throw invalidArgument(field, `system-scope jobs must have a kind starting with "${SYSTEM_KIND_PREFIX}"`);
  }
  if (scope.type === 'tenant' && isSystemKind) {
    throw invalidArgument(field, `the "${SYSTEM_KIND_PREFIX}" prefix is reserved for the system scope`);
  }
  return value;
}

export function checkKindPrefixes(kinds: unknown, field = 'kinds'): readonly string[] | null {
  if (kinds === undefined || kinds === null) return null;
  if (!Array.isArray(kinds)) throw invalidArgument(field, 'must be a list of kind prefixes');
  if (kinds.length === 0) return null;
  return kinds.map((kind, i) => checkToken(`${field}[${i}]`, kind, MAX_KIND_BYTES));
}

/** A kind prefix a read filters by: empty for every kind, else a token of 1-255 bytes, like a kind. */
export function checkKindPrefix(prefix: unknown, field = 'kind_prefix'): string {
  return prefix === '' ? '' : checkToken(field, prefix, MAX_KIND_BYTES);
}

export function checkIdempotencyKey(key: unknown, field = 'idempotency_key'): string | null {
  return checkOptionalKey(key, field, MAX_IDEMPOTENCY_KEY_BYTES);
}

/** A supersede key: like an idempotency key, 1-255 bytes of any well-formed text. */
export function checkSupersedeKey(key: unknown, field = 'supersede_key'): string | null {
  return checkOptionalKey(key, field, MAX_SUPERSEDE_KEY_BYTES);
}

/** An ordered key: like an idempotency key, 1-255 bytes of any well-formed text. */
export function checkOrderKey(key: unknown, field = 'order_key'): string | null {
  return checkOptionalKey(key, field, MAX_ORDER_KEY_BYTES);
}

function checkOptionalKey(key: unknown, field: string, maxBytes: number): string | null {
  if (key === undefined || key === null) return null;
  if (typeof key !== 'string') throw invalidArgument(field, 'must be a string');
  if (key.length === 0) throw invalidArgument(field, 'must not be empty (omit it instead)');
  checkWellFormed(field, key);
  if (utf8Length(key) > maxBytes) throw invalidArgument(field, `must be at most ${maxBytes} bytes`);
  return key;
}

export function checkIntegerInRange(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalidArgument(field, 'must be an integer');
  if (value < min || value > max) throw invalidArgument(field, `must be between ${min} and ${max} (got ${value})`);
  // -0 is an integer in range, but it would be stored as 0 and read back different.
  return value === 0 ? 0 : value;
}

export function checkPriority(priority: unknown, field = 'priority'): number {
  return checkIntegerInRange(field, priority, 0, 255);
}

export function checkBytes(field: string, value: unknown, maxBytes: number): Uint8Array {
  if (!(value instanceof Uint8Array)) throw invalidArgument(field, 'must be bytes');
  if (value.byteLength > maxBytes) {
    throw invalidArgument(field, `is ${value.byteLength} bytes, over the limit of ${maxBytes}`);
  }
  return value;
}

/**
 * A progress report: JSON text of at most {@link MAX_PROGRESS_CHARS} characters. Checked as
 * JSON here, once, so every reader (the dashboard, the CLI, a gRPC client) may parse it.
 */
export function checkProgress(progress: unknown, field = 'progress'): string {
  if (typeof progress !== 'string') throw invalidArgument(field, 'must be a string of JSON text');
  if (progress.length > MAX_PROGRESS_CHARS) {
    throw invalidArgument(field, `is ${progress.length} characters, over the limit of ${MAX_PROGRESS_CHARS}`);
  }
  if (!progress.isWellFormed()) throw invalidArgument(field, 'must not hold a lone UTF-16 surrogate');
  try {
    JSON.parse(progress);
  } catch {
    throw invalidArgument(field, 'must be JSON text');
  }
  return progress;
}

/** A time a job is scheduled for: from the epoch to 2200 (`MAX_TIMESTAMP_MICROS`), in µs. */
export function checkTimestamp(field: string, value: unknown): Micros {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalidArgument(field, 'must be an integer (µs)');
  if (value < 0 || value > MAX_TIMESTAMP_MICROS) {
    throw invalidArgument(
      field,
      `must be from 0 to ${MAX_TIMESTAMP_MICROS} µs (2200-01-01T00:00:00Z) since the epoch (got ${value})`,
    );
  }
  return value;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A job id: a UUID in canonical text form (case-insensitive); returned lower-case. */
export function checkJobId(jobId: unknown, field = 'job_id'): string {
  if (typeof jobId !== 'string') throw invalidArgument(field, 'must be a string');
  const lower = jobId.toLowerCase();
  if (!UUID_PATTERN.test(lower)) throw invalidArgument(field, `"${jobId.slice(0, 64)}" is not a UUID`);
  return lower;
}

export function checkScope(scope: QueueScope, field = 'scope'): QueueScope {
  if (scope.type === 'tenant') checkTenant(scope.tenant, `${field}.tenant`);
  return scope;
}

/**
 * `traceparent` per W3C Trace Context: version, trace id, parent id and flags in lower-case hex,
 * then, from a version after 00, more fields. An all-zero trace or parent id is invalid there too.
 */
const TRACEPARENT_PATTERN =
  /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}(-[\x21-\x7e]*)?$/;
/** `tracestate`: printable ASCII and spaces (the header's list syntax is the propagator's business). */
const TRACESTATE_PATTERN = /^[\x20-\x7e]*$/;

/**
 * A job's trace context: a well-formed `traceparent` and an optional `tracestate` within
 * bounds. The queue stores them and never reads them; the check keeps a record bounded and a
 * worker's propagator from meeting garbage a producer wrote.
 */
export function checkTraceContext(value: unknown, field = 'trace_context'): TraceContext | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object') throw invalidArgument(field, 'must be { traceparent, tracestate? }');
  const { traceparent, tracestate } = value as { traceparent?: unknown; tracestate?: unknown };
  if (
    typeof traceparent !== 'string' ||
    traceparent.length > MAX_TRACEPARENT_CHARS ||
    !TRACEPARENT_PATTERN.test(traceparent)
  ) {
    throw invalidArgument(`${field}.traceparent`, 'must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)');
  }
  if (tracestate === undefined || tracestate === null || tracestate === '') return { traceparent, tracestate: null };
  if (typeof tracestate !== 'string' || !TRACESTATE_PATTERN.test(tracestate)) {
    throw invalidArgument(`${field}.tracestate`, 'must be printable ASCII');
  }
  if (tracestate.length > MAX_TRACESTATE_CHARS) {
    throw invalidArgument(`${field}.tracestate`, `must be at most ${MAX_TRACESTATE_CHARS} characters`);
  }
  return { traceparent, tracestate };
}

/**
 * A caller's fence with its fields checked for shape (a worker id, a generation in range): whether
 * it still holds the lease is `transitions.checkFence`'s question, asked inside the store's write.
 */
export function parseFence(fence: LeaseFence): LeaseFence {
  return {
    workerId: checkWorkerId(fence.workerId),
    leaseGeneration: checkIntegerInRange('lease_generation', fence.leaseGeneration, 0, Number.MAX_SAFE_INTEGER),
  };
}
