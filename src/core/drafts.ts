/** Turning a producer's request into a validated job draft, before anything is written. */
import { invalidArgument } from './errors.ts';
import { MAX_ATTEMPTS_LIMIT, MAX_DURATION_SECS } from './bounds.ts';
import type { NewJobFields } from './transitions.ts';
import type { Micros, NewJob, QueueScope } from './types.ts';
import {
  checkBytes,
  checkIdempotencyKey,
  checkIntegerInRange,
  checkKind,
  checkPriority,
  checkTimestamp,
  checkSupersedeKey,
  checkTraceContext,
} from './validate.ts';
import { checkSupersedeMode } from './supersede.ts';

/** A job to create; the store assigns `createdAt` (strictly increasing per store). */
export type JobDraft = Omit<NewJobFields, 'createdAt'>;

/**
 * `draft` with the `createdAt` its store assigned, for `enqueue`. Field by field, not
 * `{ ...draft, createdAt }`: see `withChanges` in `transitions.ts` for what a spread costs.
 */
export function withCreatedAt(draft: JobDraft, createdAt: Micros): NewJobFields {
  return {
    jobId: draft.jobId,
    tenant: draft.tenant,
    kind: draft.kind,
    payload: draft.payload,
    priority: draft.priority,
    createdAt,
    notBefore: draft.notBefore,
    idempotencyKey: draft.idempotencyKey,
    maxAttempts: draft.maxAttempts,
    timeoutSecs: draft.timeoutSecs,
    traceContext: draft.traceContext ?? null,
    supersedeKey: draft.supersedeKey ?? null,
    debounceUntil: draft.debounceUntil ?? null,
  };
}

export const DEFAULT_PRIORITY = 128;
const EMPTY = Buffer.alloc(0);
/** Ten years: from any clock before 2200, `now + delay` still fits a record (`MAX_DURATION_SECS`). */
const MAX_DELAY_MS = MAX_DURATION_SECS * 1_000;

/** Records hold Buffers whichever backend produced them (decoded values are Buffers), so records compare equal. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A completion's result as stored: bounded by `maxBytes` (`jobs.max_result_bytes`), or `null` for none. */
export function checkResult(result: Uint8Array | undefined, maxBytes: number): Buffer | null {
  return result === undefined ? null : asBuffer(checkBytes('result', result, maxBytes));
}

/** A payload as stored: bytes as given, a string as its UTF-8 bytes. */
function payloadBytes(payload: unknown, field: string): unknown {
  if (payload === undefined) return EMPTY;
  if (typeof payload === 'string') return Buffer.from(payload, 'utf8');
  if (payload !== null && !(payload instanceof Uint8Array)) throw invalidArgument(field, 'must be bytes or a string');
  return payload;
}

export interface DraftContext {
  readonly now: Micros;
  /** Prepended to field names in errors, e.g. `jobs[3].`. */
  readonly fieldPrefix: string;
  readonly maxPayloadBytes: number;
  /** The id the new job gets (minted by the caller: ids are not the queue's meaning). */
  readonly jobId: string;
}

/** Validate a request into a draft; throws `invalid_argument` naming the field. */
export function draftJob(scope: QueueScope, job: NewJob, context: DraftContext): JobDraft {
  const { now, fieldPrefix: prefix } = context;
  const tenant = scope.type === 'tenant' ? scope.tenant : null;
  const kind = checkKind(job.kind, scope, `${prefix}kind`);
  const payloadField = `${prefix}payload`;
  const payload = asBuffer(checkBytes(payloadField, payloadBytes(job.payload, payloadField), context.maxPayloadBytes));
  const priority = checkPriority(job.priority ?? DEFAULT_PRIORITY, `${prefix}priority`);
  const supersedeKey = checkSupersedeKey(job.supersedeKey, `${prefix}supersede_key`);
  if (supersedeKey === null && job.supersede !== undefined) {
    throw invalidArgument(`${prefix}supersede`, 'needs a supersede_key');
  }
  const supersede = checkSupersedeMode(job.supersede, `${prefix}supersede`);
  let notBefore: Micros | null = null;
  let debounceUntil: Micros | null = null;
  if (job.debounceMaxMs !== undefined && job.debounceMs === undefined) {
    throw invalidArgument(`${prefix}debounce_max_ms`, 'needs debounce_ms');
  }
  if (job.debounceMs !== undefined) {
    const field = `${prefix}debounce_ms`;
    if (supersedeKey === null) throw invalidArgument(field, 'needs a supersede_key (debounce is per key)');
    if (job.delayMs !== undefined || job.notBefore !== undefined) {
      throw invalidArgument(field, 'cannot be combined with delay_ms or not_before');
    }
    // Trailing: due one window after this enqueue, which replaces the Pending one before it.
    const window = checkIntegerInRange(field, job.debounceMs, 1, MAX_DELAY_MS);
    notBefore = now + window * 1000;
    if (job.debounceMaxMs !== undefined) {
      // As if this enqueue begins the run; the store carries the run's bound over when it replaces one.
      debounceUntil =
        now + checkIntegerInRange(`${prefix}debounce_max_ms`, job.debounceMaxMs, window, MAX_DELAY_MS) * 1000;
    }
  } else if (job.notBefore !== undefined) {
    notBefore = checkTimestamp(`${prefix}not_before`, job.notBefore);
  } else if (job.delayMs !== undefined) {
    const delay = checkIntegerInRange(`${prefix}delay_ms`, job.delayMs, 0, MAX_DELAY_MS);
    notBefore = delay > 0 ? now + delay * 1000 : null;
  }
  const maxAttempts =
    job.maxAttempts === undefined
      ? null
      : checkIntegerInRange(`${prefix}max_attempts`, job.maxAttempts, 1, MAX_ATTEMPTS_LIMIT);
  const timeoutSecs =
    job.timeoutSecs === undefined
      ? null
      : checkIntegerInRange(`${prefix}timeout_secs`, job.timeoutSecs, 1, MAX_DURATION_SECS);
  const idempotencyKey = checkIdempotencyKey(job.idempotencyKey, `${prefix}idempotency_key`);
  const traceContext = checkTraceContext(job.traceContext, `${prefix}trace_context`);
  return {
    jobId: context.jobId,
    tenant,
    kind,
    payload,
    priority,
    notBefore,
    idempotencyKey,
    maxAttempts,
    timeoutSecs,
    traceContext,
    // Always both, never a conditional spread: every draft keeps one shape (see `withCreatedAt`).
    supersedeKey,
    supersede,
    debounceUntil,
  };
}
