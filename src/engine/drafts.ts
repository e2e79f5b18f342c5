/** Turning a producer's request into a validated job draft, before anything is written. */
import {
  checkBytes,
  checkIdempotencyKey,
  checkIntegerInRange,
  checkKind,
  checkPriority,
  checkTimestamp,
} from '../core/validate.ts';
import type { Micros, QueueScope } from '../core/types.ts';
import type { JobDraft } from '../storage/types.ts';
import { newJobId } from './job-ids.ts';
import type { EnqueueOptions } from './queue.ts';

export const DEFAULT_PRIORITY = 128;
const EMPTY = Buffer.alloc(0);
const MAX_DELAY_MS = 10 * 365 * 24 * 3600 * 1000;

/** Records hold Buffers whichever backend produced them (decoded values are Buffers), so records compare equal. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Validate a request into a draft; throws `invalid_argument` naming the field (after `prefix`). */
export function draftJob(
  scope: QueueScope,
  job: EnqueueOptions,
  now: Micros,
  prefix: string,
  maxPayloadBytes: number,
): JobDraft {
  const tenant = scope.type === 'tenant' ? scope.tenant : null;
  const kind = checkKind(job.kind, scope, `${prefix}kind`);
  const payload = asBuffer(checkBytes(`${prefix}payload`, job.payload ?? EMPTY, maxPayloadBytes));
  const priority = checkPriority(job.priority ?? DEFAULT_PRIORITY, `${prefix}priority`);
  let notBefore: Micros | null = null;
  if (job.notBefore !== undefined) {
    notBefore = checkTimestamp(`${prefix}not_before`, job.notBefore);
  } else if (job.delayMs !== undefined) {
    const delay = checkIntegerInRange(`${prefix}delay_ms`, job.delayMs, 0, MAX_DELAY_MS);
    notBefore = delay > 0 ? now + delay * 1000 : null;
  }
  const maxAttempts =
    job.maxAttempts === undefined ? null : checkIntegerInRange(`${prefix}max_attempts`, job.maxAttempts, 1, 1_000_000);
  const idempotencyKey = checkIdempotencyKey(job.idempotencyKey, `${prefix}idempotency_key`);
  return { jobId: newJobId(), tenant, kind, payload, priority, notBefore, idempotencyKey, maxAttempts };
}
