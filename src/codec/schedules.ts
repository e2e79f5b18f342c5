/**
 * Schedules as stored: their keys (RocksDB's `default` column family) and their value
 * envelope `[SCHEDULE_VERSION 1 byte][msgpack]`, the same bytes in PostgreSQL's `record`
 * column. Field names are snake_case, as for jobs, so a reader in any language can decode them.
 *
 *     schedule/<scope 32><name UTF-8>                 → the schedule
 *     schedule-due/<next_due_at 8><scope 32><name>    → empty: the due index, only while not paused
 */
import { Packr } from 'msgpackr';
import { CorruptRecordError, ErrorCode, invalidArgument, TelhaError } from '../core/errors.ts';
import type { Schedule } from '../core/schedules.ts';
import { SYSTEM_SCOPE, tenantScope, type Micros, type QueueScope } from '../core/types.ts';
import { readU64, scopeBytes, SCOPE_BYTES, writeU64 } from './keys.ts';
import { isBytes, isString, isStringOrNull, isUint, isUintOrNull } from './value.ts';

/** Version 1: the layout of `encodeSchedule`. */
export const SCHEDULE_VERSION = 1;

const packr = new Packr({ useRecords: false, variableMapSize: true, int64AsType: 'number' });

export const SCHEDULE_PREFIX = Buffer.from('schedule/');
export const SCHEDULE_DUE_PREFIX = Buffer.from('schedule-due/');

/** `schedule/<scope 32><name>`: every schedule of a scope sits under `scheduleScopePrefix(scope)`. */
export function scheduleKey(scope: QueueScope, name: string): Buffer {
  return Buffer.concat([SCHEDULE_PREFIX, scopeBytes(scope), Buffer.from(name, 'utf8')]);
}

export function scheduleScopePrefix(scope: QueueScope): Buffer {
  return Buffer.concat([SCHEDULE_PREFIX, scopeBytes(scope)]);
}

/** `schedule-due/<due 8><scope 32><name>`: a scan from the start up to `now` finds what is due, earliest first. */
export function scheduleDueKey(due: Micros, scope: QueueScope, name: string): Buffer {
  const time = Buffer.alloc(8);
  writeU64(time, due, 0);
  return Buffer.concat([SCHEDULE_DUE_PREFIX, time, scopeBytes(scope), Buffer.from(name, 'utf8')]);
}

/** The first due-index key after every schedule due at or before `now`. */
export function scheduleDueBound(now: Micros): Buffer {
  const time = Buffer.alloc(8);
  writeU64(time, now + 1, 0);
  return Buffer.concat([SCHEDULE_DUE_PREFIX, time]);
}

/** The schedule row a due-index key points to. */
export function scheduleKeyOfDue(dueKey: Uint8Array): Buffer {
  return Buffer.concat([SCHEDULE_PREFIX, dueKey.subarray(SCHEDULE_DUE_PREFIX.length + 8)]);
}

export function dueOfDueKey(dueKey: Uint8Array): Micros {
  return readU64(dueKey, SCHEDULE_DUE_PREFIX.length);
}

/** `[scope 32][name]`: the order schedules list in, the same on every backend. */
export function scheduleSortKey(schedule: Pick<Schedule, 'scope' | 'name'>): Buffer {
  return Buffer.concat([scopeBytes(schedule.scope), Buffer.from(schedule.name, 'utf8')]);
}

/** The token that resumes a schedule listing after `schedule`. */
export function schedulePageToken(schedule: Pick<Schedule, 'scope' | 'name'>): string {
  return scheduleSortKey(schedule).toString('base64url');
}

/** The sort key a schedule page token resumes after; one no store made is `invalid_argument` on `page_token`. */
export function schedulePageKey(token: string): Buffer {
  const bytes = Buffer.from(token, 'base64url');
  if (bytes.length <= SCOPE_BYTES || bytes.toString('base64url') !== token) {
    throw invalidArgument('page_token', 'is not a token returned by list');
  }
  return bytes;
}

function u64(schedule: Schedule, field: string, value: number): number | bigint {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TelhaError(
      ErrorCode.Internal,
      `schedule ${schedule.name}: refusing to write field ${field} = ${value}, which would not read back`,
    );
  }
  return value > 0xffff_ffff ? BigInt(value) : value;
}

function optionalU64(schedule: Schedule, field: string, value: number | null): number | bigint | null {
  return value === null ? null : u64(schedule, field, value);
}

export function encodeSchedule(schedule: Schedule): Buffer {
  const { job } = schedule;
  const body = packr.pack({
    tenant: schedule.scope.type === 'tenant' ? schedule.scope.tenant : null,
    name: schedule.name,
    cron: schedule.cron,
    timezone: schedule.timezone,
    every_secs: optionalU64(schedule, 'every_secs', schedule.everySecs),
    job: {
      kind: job.kind,
      payload: job.payload,
      priority: u64(schedule, 'job.priority', job.priority),
      max_attempts: optionalU64(schedule, 'job.max_attempts', job.maxAttempts),
      timeout_secs: optionalU64(schedule, 'job.timeout_secs', job.timeoutSecs),
    },
    paused: schedule.paused,
    next_due_at: optionalU64(schedule, 'next_due_at', schedule.nextDueAt),
    last_due_at: optionalU64(schedule, 'last_due_at', schedule.lastDueAt),
    created_at: u64(schedule, 'created_at', schedule.createdAt),
    updated_at: u64(schedule, 'updated_at', schedule.updatedAt),
  });
  const out = Buffer.allocUnsafe(1 + body.length);
  out[0] = SCHEDULE_VERSION;
  body.copy(out, 1);
  return out;
}

/** Decode a stored schedule; `where` names the row in the error. */
export function decodeSchedule(value: Uint8Array, where: string): Schedule {
  if (value.byteLength === 0) throw new CorruptRecordError(where, 'empty value');
  if (value[0] !== SCHEDULE_VERSION) throw new CorruptRecordError(where, `unknown schedule version ${value[0]}`);
  let raw: unknown;
  try {
    raw = packr.unpack(value.subarray(1));
  } catch (cause) {
    throw new CorruptRecordError(where, 'msgpack body does not decode', cause);
  }
  const map = (v: unknown, what: string): Record<string, unknown> => {
    if (typeof v !== 'object' || v === null || Array.isArray(v))
      throw new CorruptRecordError(where, `${what} is not a map`);
    return v as Record<string, unknown>;
  };
  const r = map(raw, 'body');
  const field = <T>(m: Record<string, unknown>, name: string, check: (v: unknown) => v is T, expected: string): T => {
    const v = m[name];
    if (!check(v)) throw new CorruptRecordError(where, `field ${name} is not ${expected}`);
    return v;
  };
  const job = map(r['job'], 'field job');
  const tenant = field(r, 'tenant', isStringOrNull, 'a string or nil');
  const paused = r['paused'];
  if (typeof paused !== 'boolean') throw new CorruptRecordError(where, 'field paused is not a boolean');
  return {
    scope: tenant === null ? SYSTEM_SCOPE : tenantScope(tenant),
    name: field(r, 'name', isString, 'a string'),
    cron: field(r, 'cron', isStringOrNull, 'a string or nil'),
    timezone: field(r, 'timezone', isStringOrNull, 'a string or nil'),
    everySecs: field(r, 'every_secs', isUintOrNull, 'an integer or nil'),
    job: {
      kind: field(job, 'kind', isString, 'a string'),
      payload: field(job, 'payload', isBytes, 'bytes'),
      priority: field(job, 'priority', isUint, 'an integer'),
      maxAttempts: field(job, 'max_attempts', isUintOrNull, 'an integer or nil'),
      timeoutSecs: field(job, 'timeout_secs', isUintOrNull, 'an integer or nil'),
    },
    paused,
    nextDueAt: field(r, 'next_due_at', isUintOrNull, 'an integer or nil'),
    lastDueAt: field(r, 'last_due_at', isUintOrNull, 'an integer or nil'),
    createdAt: field(r, 'created_at', isUint, 'an integer'),
    updatedAt: field(r, 'updated_at', isUint, 'an integer'),
  };
}
