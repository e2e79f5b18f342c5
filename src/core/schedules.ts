/**
 * Schedules: named, per-scope rules that enqueue a job at each due time, from a cron expression
 * in a time zone or a fixed interval. This module is their meaning, with no I/O: validation,
 * the next due time, and what one firing writes. Each backend wraps `fire` in one atomic write
 * (the job and the schedule's next due time together).
 *
 * Catch-up policy: a schedule that was not fired for a while (every server down, or behind)
 * fires once, for the latest due time that has passed, not once per missed tick. A paused
 * schedule never fires; resumed, it is due at its next time from then on, with no catch-up
 * for the paused stretch.
 *
 * Exactly once per due time: the job's idempotency key is `schedule:<name>@<due time ISO>`, and
 * the schedule's `nextDueAt` moves past that time in the same write, so a second firing of the
 * same due time (another server, a repeated tick, a restart mid-way) creates nothing.
 */
import { Cron } from 'croner';
import type { JobDraft } from './drafts.ts';
import { draftJob } from './drafts.ts';
import { ErrorCode, invalidArgument, TelhaError } from './errors.ts';
import { MAX_CRON_CHARS, MAX_DURATION_SECS, MAX_TIMESTAMP_MICROS, MAX_TIMEZONE_CHARS } from './bounds.ts';
import { inScope } from './scope.ts';
import type { Micros, NewJob, QueueScope, ScopeFilter } from './types.ts';
import { checkIntegerInRange, checkScheduleName } from './validate.ts';

/** The job a schedule enqueues at each due time. */
export interface ScheduleJob {
  readonly kind: string;
  /** Opaque bytes, at most `jobs.max_payload_bytes`. */
  readonly payload: Uint8Array;
  /** 0-255, lower is sooner. */
  readonly priority: number;
  /** The job's own attempt ceiling; `null` for its kind's or `jobs.max_attempts`. */
  readonly maxAttempts: number | null;
  /** The job's own attempt timeout in seconds; `null` for its kind's. */
  readonly timeoutSecs: number | null;
}

/** A stored schedule. Exactly one of `cron` and `everySecs` is set. */
export interface Schedule {
  readonly scope: QueueScope;
  /** 1-128 bytes, no whitespace; unique within the scope. */
  readonly name: string;
  /** A cron expression (5 fields, or 6 with seconds first), read in `timezone`. */
  readonly cron: string | null;
  /** An IANA time zone for `cron` (default `UTC`); `null` for an interval. */
  readonly timezone: string | null;
  /** A fixed interval in seconds, counted from `createdAt`. */
  readonly everySecs: number | null;
  readonly job: ScheduleJob;
  readonly paused: boolean;
  /** When it fires next; `null` while paused, or when the expression has no time left before 2200. */
  readonly nextDueAt: Micros | null;
  /** The due time it last fired for. */
  readonly lastDueAt: Micros | null;
  readonly createdAt: Micros;
  readonly updatedAt: Micros;
}

/** The job template as a caller writes it: a `NewJob` without a time or a key of its own. */
export type ScheduleJobInput = Pick<NewJob, 'kind' | 'payload' | 'priority' | 'maxAttempts' | 'timeoutSecs'>;

/** A schedule to create, as the engine, the SDK and the wire accept it. */
export interface NewSchedule {
  readonly name: string;
  /** A cron expression; give this or `everySecs`. */
  readonly cron?: string;
  /** The time zone `cron` is read in. Default `UTC`. */
  readonly timezone?: string;
  /** Fire every this many seconds (1 s to ten years), counted from creation. */
  readonly everySecs?: number;
  readonly job: ScheduleJobInput;
  /** Created paused: it fires only once resumed. Default `false`. */
  readonly paused?: boolean;
}

/**
 * A change to a schedule: each field given replaces the stored one. Giving `cron` turns an
 * interval schedule into a cron one and `everySecs` the other way round.
 */
export interface ScheduleChanges {
  readonly cron?: string;
  readonly timezone?: string;
  readonly everySecs?: number;
  readonly job?: ScheduleJobInput;
  readonly paused?: boolean;
}

/** One firing: the job to insert and the schedule to store, in one atomic write. */
export interface ScheduleFiring {
  readonly draft: JobDraft;
  readonly next: Schedule;
}

export const DEFAULT_TIMEZONE = 'UTC';
/** The id `draftJob` needs to validate a template; the template keeps no id. */
const TEMPLATE_JOB_ID = '00000000-0000-7000-8000-000000000000';

export interface ScheduleContext {
  readonly now: Micros;
  readonly maxPayloadBytes: number;
}

/** The time zone: an IANA name this runtime knows. */
export function checkTimezone(timezone: unknown, field = 'timezone'): string {
  if (typeof timezone !== 'string') throw invalidArgument(field, 'must be a string');
  if (timezone.length === 0 || timezone.length > MAX_TIMEZONE_CHARS) {
    throw invalidArgument(field, `must be 1-${MAX_TIMEZONE_CHARS} characters`);
  }
  try {
    // Throws a RangeError for a name the runtime's time zone data lacks.
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw invalidArgument(field, `"${timezone}" is not a known IANA time zone`);
  }
  return timezone;
}

function cronOf(pattern: string, timezone: string): Cron {
  return new Cron(pattern, { timezone, paused: true });
}

/** A cron expression of 5 fields (or 6, seconds first) that croner parses and that fires at least once before 2200. */
export function checkCron(cron: unknown, timezone: string, now: Micros, field = 'cron'): string {
  if (typeof cron !== 'string') throw invalidArgument(field, 'must be a string');
  if (cron.trim().length === 0) throw invalidArgument(field, 'must not be empty');
  if (cron.length > MAX_CRON_CHARS) throw invalidArgument(field, `must be at most ${MAX_CRON_CHARS} characters`);
  // croner reads a seventh field as the year; the wire API promises 5 or 6 fields, so it is refused.
  const fields = cron.trim().split(/\s+/).length;
  if (fields > 6) {
    throw invalidArgument(field, `"${cron}" has ${fields} fields: give 5, or 6 with seconds first`);
  }
  let next: Date | null;
  try {
    next = cronOf(cron, timezone).nextRun(new Date(Math.floor(now / 1000)));
  } catch (error) {
    throw invalidArgument(field, `"${cron}" is not a valid cron expression: ${(error as Error).message}`);
  }
  if (next === null || next.getTime() * 1000 > MAX_TIMESTAMP_MICROS) {
    throw invalidArgument(field, `"${cron}" never fires`);
  }
  return cron;
}

function checkTemplate(scope: QueueScope, job: unknown, maxPayloadBytes: number, now: Micros): ScheduleJob {
  if (typeof job !== 'object' || job === null) throw invalidArgument('job', 'must give the job to enqueue');
  const input = job as NewJob;
  // The schedule sets the job's time and key; a template that set its own would contradict it.
  if (input.idempotencyKey !== undefined) throw invalidArgument('job.idempotency_key', 'is set by the schedule');
  if (input.delayMs !== undefined) throw invalidArgument('job.delay_ms', 'is not allowed in a schedule');
  if (input.notBefore !== undefined) throw invalidArgument('job.not_before', 'is not allowed in a schedule');
  // Latest wins is refused rather than kept: each firing has its own idempotency key, and a key
  // shared by every firing would cancel a run that has not started yet, or (debounced) push
  // every firing past its due time; no one has asked for either.
  if (input.supersedeKey !== undefined) throw invalidArgument('job.supersede_key', 'is not allowed in a schedule');
  if (input.supersede !== undefined) throw invalidArgument('job.supersede', 'is not allowed in a schedule');
  if (input.debounceMs !== undefined) throw invalidArgument('job.debounce_ms', 'is not allowed in a schedule');
  const draft = draftJob(scope, input, { now, fieldPrefix: 'job.', maxPayloadBytes, jobId: TEMPLATE_JOB_ID });
  return {
    kind: draft.kind,
    payload: draft.payload,
    priority: draft.priority,
    maxAttempts: draft.maxAttempts,
    timeoutSecs: draft.timeoutSecs,
  };
}

type Timing = Pick<Schedule, 'cron' | 'timezone' | 'everySecs'>;

function checkTiming(input: { cron?: unknown; timezone?: unknown; everySecs?: unknown }, now: Micros): Timing {
  const { cron, timezone, everySecs } = input;
  if (cron !== undefined && everySecs !== undefined) {
    throw invalidArgument('every_secs', 'give either cron or every_secs, not both');
  }
  if (everySecs !== undefined) {
    if (timezone !== undefined) throw invalidArgument('timezone', 'applies only to a cron schedule');
    return {
      cron: null,
      timezone: null,
      everySecs: checkIntegerInRange('every_secs', everySecs, 1, MAX_DURATION_SECS),
    };
  }
  if (cron === undefined) throw invalidArgument('cron', 'give a cron expression or every_secs');
  const zone = checkTimezone(timezone ?? DEFAULT_TIMEZONE);
  return { cron: checkCron(cron, zone, now), timezone: zone, everySecs: null };
}

/** Validate a new schedule into what the store keeps; throws `invalid_argument` naming the field. */
export function draftSchedule(scope: QueueScope, input: NewSchedule, context: ScheduleContext): Schedule {
  const { now } = context;
  const name = checkScheduleName(input.name);
  const timing = checkTiming(input, now);
  const job = checkTemplate(scope, input.job, context.maxPayloadBytes, now);
  const paused = checkPaused(input.paused);
  const schedule: Schedule = {
    scope,
    name,
    ...timing,
    job,
    paused,
    nextDueAt: null,
    lastDueAt: null,
    createdAt: now,
    updatedAt: now,
  };
  return paused ? schedule : { ...schedule, nextDueAt: nextDue(schedule, now) };
}

function checkPaused(paused: unknown): boolean {
  if (paused === undefined) return false;
  if (typeof paused !== 'boolean') throw invalidArgument('paused', 'must be true or false');
  return paused;
}

/**
 * Check a change before anything is read or written: the same refusals `applyChanges` would
 * make, so a bad request touches no row.
 */
export function checkChanges(scope: QueueScope, changes: ScheduleChanges, context: ScheduleContext): void {
  const { now } = context;
  if (changes.cron !== undefined || changes.everySecs !== undefined) checkTiming(changes, now);
  else if (changes.timezone !== undefined) checkTimezone(changes.timezone);
  if (changes.job !== undefined) checkTemplate(scope, changes.job, context.maxPayloadBytes, now);
  checkPaused(changes.paused);
}

/**
 * The schedule after a change. A new timing, or a resume, sets the next due time from now: a
 * resumed schedule does not catch up on the time it was paused.
 */
export function applyChanges(current: Schedule, changes: ScheduleChanges, context: ScheduleContext): Schedule {
  const { now } = context;
  let timing: Timing = current;
  if (changes.cron !== undefined || changes.everySecs !== undefined) {
    timing = checkTiming(
      changes.cron !== undefined && changes.timezone === undefined
        ? { ...changes, timezone: current.timezone ?? undefined }
        : changes,
      now,
    );
  } else if (changes.timezone !== undefined) {
    if (current.cron === null) throw invalidArgument('timezone', 'applies only to a cron schedule');
    timing = checkTiming({ cron: current.cron, timezone: changes.timezone }, now);
  }
  const job =
    changes.job === undefined ? current.job : checkTemplate(current.scope, changes.job, context.maxPayloadBytes, now);
  const paused = changes.paused === undefined ? current.paused : checkPaused(changes.paused);
  const retimed = timing !== current || (current.paused && !paused);
  const next: Schedule = { ...current, ...pick(timing), job, paused, updatedAt: now };
  if (paused) return { ...next, nextDueAt: null };
  return retimed || current.nextDueAt === null ? { ...next, nextDueAt: nextDue(next, now) } : next;
}

function pick(timing: Timing): Timing {
  return { cron: timing.cron, timezone: timing.timezone, everySecs: timing.everySecs };
}

/**
 * The first due time strictly after `after`, or `null` when there is none before 2200. A cron
 * schedule asks croner, which reads the expression in the schedule's time zone: a wall-clock
 * time skipped by a spring-forward change fires at the first instant after the gap, and one
 * repeated by a fall-back change fires once, at its first occurrence. An interval schedule is
 * due at `createdAt + k * everySecs`, k >= 1.
 */
export function nextDue(schedule: Timing & Pick<Schedule, 'createdAt'>, after: Micros): Micros | null {
  let due: Micros | null;
  if (schedule.everySecs !== null) {
    const every = schedule.everySecs * 1_000_000;
    const k = Math.max(1, Math.floor((after - schedule.createdAt) / every) + 1);
    due = schedule.createdAt + k * every;
  } else {
    const next = cronOf(schedule.cron ?? '', schedule.timezone ?? DEFAULT_TIMEZONE).nextRun(
      new Date(Math.floor(after / 1000)),
    );
    due = next === null ? null : next.getTime() * 1000;
  }
  return due === null || due > MAX_TIMESTAMP_MICROS ? null : due;
}

/** The latest due time at or before `now`, given that `nextDueAt` (at or before `now`) is one. */
function latestDue(schedule: Schedule & { readonly nextDueAt: Micros }, now: Micros): Micros {
  if (schedule.everySecs !== null) {
    const every = schedule.everySecs * 1_000_000;
    const k = Math.floor((now - schedule.createdAt) / every);
    return Math.max(schedule.nextDueAt, schedule.createdAt + k * every);
  }
  // croner counts a run earlier in the same second as the reference, so 1 ms past `now` includes `now`.
  const [previous] = cronOf(schedule.cron ?? '', schedule.timezone ?? DEFAULT_TIMEZONE).previousRuns(
    1,
    new Date(Math.floor(now / 1000) + 1),
  );
  const at = previous === undefined ? schedule.nextDueAt : previous.getTime() * 1000;
  return Math.min(now, Math.max(schedule.nextDueAt, at));
}

/** The idempotency key of the job a schedule enqueues for one due time. */
export function firingKey(name: string, due: Micros): string {
  return `schedule:${name}@${new Date(Math.floor(due / 1000)).toISOString()}`;
}

/**
 * The job a schedule enqueues when run now, outside its timing: its template, ready at once, keyed
 * `schedule:<name>@run:<now ISO>` so the job says where it came from and a repeat within the same
 * millisecond (a double click) creates nothing more. The schedule itself is not touched: its next
 * due time stays, and a paused one stays paused.
 */
export function runNowJob(schedule: Schedule, now: Micros): NewJob {
  const { job } = schedule;
  return {
    kind: job.kind,
    payload: job.payload,
    priority: job.priority,
    idempotencyKey: `schedule:${schedule.name}@run:${new Date(Math.floor(now / 1000)).toISOString()}`,
    ...(job.maxAttempts === null ? {} : { maxAttempts: job.maxAttempts }),
    ...(job.timeoutSecs === null ? {} : { timeoutSecs: job.timeoutSecs }),
  };
}

/**
 * What firing a schedule at `now` writes, or `null` when it is not due (paused, or its next
 * due time is still ahead). One job for the latest due time that has passed, however many were
 * missed (the catch-up policy), and the schedule due next strictly after `now`.
 */
export function fire(schedule: Schedule, now: Micros, jobId: string): ScheduleFiring | null {
  if (schedule.paused || schedule.nextDueAt === null || schedule.nextDueAt > now) return null;
  const due = latestDue({ ...schedule, nextDueAt: schedule.nextDueAt }, now);
  const { job } = schedule;
  const draft: JobDraft = {
    jobId,
    tenant: schedule.scope.type === 'tenant' ? schedule.scope.tenant : null,
    kind: job.kind,
    payload: job.payload,
    priority: job.priority,
    notBefore: null,
    idempotencyKey: firingKey(schedule.name, due),
    maxAttempts: job.maxAttempts,
    timeoutSecs: job.timeoutSecs,
    // A firing starts no producer's trace: the schedule, not a caller, enqueued it.
    traceContext: null,
  };
  return {
    draft,
    next: { ...schedule, lastDueAt: due, nextDueAt: nextDue(schedule, now), updatedAt: now },
  };
}

/** Whether a schedule belongs to `scope`, by the same rule as a job. */
export function scheduleInScope(schedule: Pick<Schedule, 'scope'>, scope: ScopeFilter): boolean {
  return inScope({ tenant: schedule.scope.type === 'tenant' ? schedule.scope.tenant : null }, scope);
}

export function scheduleExists(name: string): TelhaError {
  return new TelhaError(ErrorCode.FailedPrecondition, `schedule ${name} already exists`);
}

export function tooManySchedules(limit: number): TelhaError {
  return new TelhaError(
    ErrorCode.FailedPrecondition,
    `the scope already holds ${limit} schedules, the most one scope may (MAX_SCHEDULES_PER_SCOPE); delete one first`,
  );
}
