/**
 * The one place key layouts are defined.
 *
 * The job key is 58 bytes (docs/design.md explains the order):
 *
 *     [ scope 32 ][ state 1 ][ priority 1 ][ created_at 8 ][ job_id 16 ]
 *
 * Every integer is big-endian, so unsigned byte order equals (scope, state,
 * priority, created_at, job_id) order: a scan from `[scope][Pending]` meets
 * ready work first, lower priority bytes first, FIFO within a priority.
 * `created_at` is ascending, not inverted: the queue wants oldest first.
 */
import { createHash } from 'node:crypto';
import { parse as parseUuid, stringify as stringifyUuid } from 'uuid';
import { invalidArgument } from '../core/errors.ts';
import type { ListPosition } from '../core/list-order.ts';
import type { JobRecord, JobState, Micros, QueueScope } from '../core/types.ts';

export const SCOPE_BYTES = 32;
export const JOB_ID_BYTES = 16;
export const JOB_KEY_BYTES = SCOPE_BYTES + 1 + 1 + 8 + JOB_ID_BYTES; // 58

const STATE_OFFSET = SCOPE_BYTES;
const PRIORITY_OFFSET = STATE_OFFSET + 1;
const CREATED_AT_OFFSET = PRIORITY_OFFSET + 1;
const JOB_ID_OFFSET = CREATED_AT_OFFSET + 8;

/** The reserved nil prefix of the system scope: 32 zero bytes, ahead of every tenant. */
export const SYSTEM_SCOPE_BYTES: Buffer = Buffer.alloc(SCOPE_BYTES);

const TENANT_SCOPE_DOMAIN = 'telha/tenant-scope/v1\n';
const scopeCache = new Map<string, Buffer>();
const SCOPE_CACHE_LIMIT = 10_000;

/**
 * A tenant's 32-byte scope: SHA-256 of `"telha/tenant-scope/v1\n" + tenant` (UTF-8).
 * A digest whose first byte is 0x00 gets 0x01 there instead, so no tenant id can
 * ever map to the system scope's nil prefix, and every tenant sorts after it.
 */
export function tenantScopeBytes(tenant: string): Buffer {
  let scope = scopeCache.get(tenant);
  if (scope === undefined) {
    scope = createHash('sha256').update(TENANT_SCOPE_DOMAIN).update(tenant, 'utf8').digest();
    if (scope[0] === 0) scope[0] = 1;
    if (scopeCache.size >= SCOPE_CACHE_LIMIT) scopeCache.clear();
    scopeCache.set(tenant, scope);
  }
  return scope;
}

export function scopeBytes(scope: QueueScope): Buffer {
  return scope.type === 'system' ? SYSTEM_SCOPE_BYTES : tenantScopeBytes(scope.tenant);
}

export function scopeOfTenant(tenant: string | null): Buffer {
  return tenant === null ? SYSTEM_SCOPE_BYTES : tenantScopeBytes(tenant);
}

/**
 * 16 bytes of a canonical UUID. Ids reaching the codec were validated at the
 * API boundary or minted here, so a hex decode is enough (uuid's `parse`
 * re-validated on every key, a visible share of enqueue CPU: bench/RESULTS.md,
 * "The measurements behind the code's choices").
 */
export function jobIdToBytes(jobId: string): Buffer {
  const bytes = Buffer.allocUnsafe(JOB_ID_BYTES);
  writeJobId(bytes, jobId, 0);
  return bytes;
}

/** Nibble value of each ASCII hex digit, -1 for anything else. */
const HEX_NIBBLE = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX_NIBBLE[48 + c] = c;
for (let c = 0; c < 6; c++) {
  HEX_NIBBLE[65 + c] = 10 + c;
  HEX_NIBBLE[97 + c] = 10 + c;
}

/**
 * Write a job id's 16 bytes into `target` at `offset`, straight from its text:
 * every key of every transition carries one, and going through an
 * intermediate hex string and buffer showed in a lease and complete's profile (bench/RESULTS.md,
 * "The measurements behind the code's choices").
 * Anything not a 36-character hyphenated UUID falls back to uuid's parser.
 */
export function writeJobId(target: Uint8Array, jobId: string, offset: number): void {
  if (jobId.length === 36) {
    let at = offset;
    let ok = true;
    for (let i = 0; i < 36; i += 2) {
      if (i === 8 || i === 13 || i === 18 || i === 23) i++;
      const hi = HEX_NIBBLE[jobId.charCodeAt(i)] ?? -1;
      const lo = HEX_NIBBLE[jobId.charCodeAt(i + 1)] ?? -1;
      if (hi < 0 || lo < 0) {
        ok = false;
        break;
      }
      target[at++] = (hi << 4) | lo;
    }
    if (ok && at === offset + JOB_ID_BYTES) return;
  }
  target.set(parseUuid(jobId), offset);
}

export function jobIdFromBytes(bytes: Uint8Array): string {
  return stringifyUuid(bytes);
}

export function writeU64(target: Buffer, value: number, offset: number): void {
  // Split by arithmetic: bitwise operators would truncate to 32 bits.
  target.writeUInt32BE(Math.floor(value / 0x1_0000_0000), offset);
  target.writeUInt32BE(value % 0x1_0000_0000, offset + 4);
}

export function readU64(source: Uint8Array, offset: number): number {
  const view = Buffer.isBuffer(source) ? source : Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  return view.readUInt32BE(offset) * 0x1_0000_0000 + view.readUInt32BE(offset + 4);
}

export interface JobKeyParts {
  readonly scope: Uint8Array;
  readonly state: JobState;
  readonly priority: number;
  readonly createdAt: Micros;
  readonly jobId: Uint8Array;
}

export function encodeJobKey(parts: JobKeyParts): Buffer {
  const key = Buffer.allocUnsafe(JOB_KEY_BYTES);
  key.set(parts.jobId, JOB_ID_OFFSET);
  return writeKeyHead(key, parts.scope, parts.state, parts.priority, parts.createdAt);
}

/** The key a record is stored under, in its current state. */
export function jobKeyOf(record: JobRecord): Buffer {
  const key = Buffer.allocUnsafe(JOB_KEY_BYTES);
  writeJobId(key, record.jobId, JOB_ID_OFFSET);
  return writeKeyHead(key, scopeOfTenant(record.tenant), record.state, record.priority, record.createdAt);
}

function writeKeyHead(key: Buffer, scope: Uint8Array, state: number, priority: number, createdAt: Micros): Buffer {
  key.set(scope, 0);
  key[STATE_OFFSET] = state;
  key[PRIORITY_OFFSET] = priority;
  writeU64(key, createdAt, CREATED_AT_OFFSET);
  return key;
}

export interface DecodedJobKey {
  readonly scope: Buffer;
  readonly state: number;
  readonly priority: number;
  readonly createdAt: Micros;
  readonly jobId: string;
}

export function decodeJobKey(key: Uint8Array): DecodedJobKey {
  if (key.byteLength !== JOB_KEY_BYTES)
    throw new RangeError(`job key must be ${JOB_KEY_BYTES} bytes, got ${key.byteLength}`);
  const buf = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  return {
    scope: buf.subarray(0, SCOPE_BYTES),
    state: buf[STATE_OFFSET] as number,
    priority: buf[PRIORITY_OFFSET] as number,
    createdAt: readU64(buf, CREATED_AT_OFFSET),
    jobId: jobIdFromBytes(buf.subarray(JOB_ID_OFFSET)),
  };
}

/**
 * The same key with another state byte: how a row found by a sweep across
 * every scope moves, since such a row carries its scope only as key bytes and
 * nothing outside the codec should rebuild scope bytes from a tenant name.
 */
export function rekey(key: Uint8Array, state: JobState): Buffer {
  const next = Buffer.from(key);
  next[STATE_OFFSET] = state;
  return next;
}

/** `[scope][state]`: the prefix of every row of one state in one scope. */
export function stateRangePrefix(scope: Uint8Array, state: JobState): Buffer {
  const prefix = Buffer.allocUnsafe(SCOPE_BYTES + 1);
  prefix.set(scope, 0);
  prefix[STATE_OFFSET] = state;
  return prefix;
}

/** The smallest key greater than every key starting with `prefix`, or `null` when the prefix is all 0xff. */
export function prefixUpperBound(prefix: Uint8Array): Buffer | null {
  const bound = Buffer.from(prefix);
  for (let i = bound.length - 1; i >= 0; i--) {
    if (bound[i] !== 0xff) {
      bound[i] = (bound[i] as number) + 1;
      return bound.subarray(0, i + 1);
    }
  }
  return null;
}

// ---- List page tokens: every store pages in job key order and resumes after the last key. ----

/** The token that resumes a listing after `record`: the hex of its job key. */
export function pageTokenAfter(record: JobRecord): string {
  return jobKeyOf(record).toString('hex');
}

/** Where a listing resumes after the page a token ends: the last job's creation time and id. */
export function pageTokenPosition(token: string): ListPosition {
  const { createdAt, jobId } = decodeJobKey(pageTokenKey(token));
  return { createdAt, jobId };
}

const PAGE_TOKEN_PATTERN = new RegExp(`^[0-9a-f]{${JOB_KEY_BYTES * 2}}$`);

/** The job key a page token resumes after; a token no store made is `invalid_argument` on `page_token`. */
export function pageTokenKey(token: string): Buffer {
  if (!PAGE_TOKEN_PATTERN.test(token)) throw invalidArgument('page_token', 'is not a token returned by list');
  return Buffer.from(token, 'hex');
}

// ---- Secondary indexes, each kept in the same write batch as the job row. ----

/** `ids` column family: `[job_id 16]` → current 58-byte job key. */
export function idIndexKey(jobId: string): Buffer {
  return jobIdToBytes(jobId);
}

/** `idempotency` column family: `[scope 32][key UTF-8]` → `[job_id 16]`. */
export function idempotencyIndexKey(scope: Uint8Array, idempotencyKey: string): Buffer {
  const keyBytes = Buffer.from(idempotencyKey, 'utf8');
  const key = Buffer.allocUnsafe(SCOPE_BYTES + keyBytes.length);
  key.set(scope, 0);
  key.set(keyBytes, SCOPE_BYTES);
  return key;
}

/**
 * `supersede` column family: `[scope 32][key UTF-8]` → `[job_id 16]`, the job holding a supersede
 * key (`core/supersede.ts`); the same layout as an idempotency key's.
 */
export function supersedeIndexKey(scope: Uint8Array, supersedeKey: string): Buffer {
  return idempotencyIndexKey(scope, supersedeKey);
}

/** `finished` column family: `[state 1][finished_at 8][job_id 16]` → job key; what retention prunes, oldest first. */
export function finishedIndexKey(state: JobState, finishedAt: Micros, jobId: string): Buffer {
  const key = Buffer.allocUnsafe(1 + 8 + JOB_ID_BYTES);
  key[0] = state;
  writeU64(key, finishedAt, 1);
  key.set(jobIdToBytes(jobId), 9);
  return key;
}

/** Upper bound (exclusive) of the `finished` entries of one state that finished before `cutoff`. */
export function finishedIndexBound(state: JobState, cutoff: Micros): Buffer {
  const key = Buffer.alloc(1 + 8);
  key[0] = state;
  writeU64(key, Math.max(0, cutoff), 1);
  return key;
}

/** `counts` column family: `[scope 32][state 1][kind UTF-8]` → u64 count of jobs. */
export function countKey(scope: Uint8Array, state: JobState, kind: string): Buffer {
  const kindBytes = Buffer.from(kind, 'utf8');
  const key = Buffer.allocUnsafe(SCOPE_BYTES + 1 + kindBytes.length);
  key.set(scope, 0);
  key[SCOPE_BYTES] = state;
  key.set(kindBytes, SCOPE_BYTES + 1);
  return key;
}

export function decodeCountKey(key: Uint8Array): { scope: Buffer; state: number; kind: string } {
  const buf = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  return {
    scope: buf.subarray(0, SCOPE_BYTES),
    state: buf[SCOPE_BYTES] as number,
    kind: buf.subarray(SCOPE_BYTES + 1).toString('utf8'),
  };
}

export function encodeU64(value: number): Buffer {
  const buf = Buffer.allocUnsafe(8);
  writeU64(buf, value, 0);
  return buf;
}
