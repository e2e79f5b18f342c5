/**
 * The dashboard's control forms read into engine calls: a pause, a kind limit, a schedule. Each
 * field is checked before anything is read or written; a bad one is `invalid_argument` naming it
 * in the wire's spelling (`every_secs`, `job.priority`), as gRPC would, so the page that shows
 * the message can say which field to fix and nothing was changed.
 */
import { invalidArgument } from '../core/errors.ts';
import type { ScheduleChanges, ScheduleJobInput, NewSchedule, Schedule } from '../core/schedules.ts';
import type { RequestedScope } from '../edge/auth.ts';
import { onlyKnown } from './params.ts';

export type Form = Readonly<Record<string, unknown>>;

/** A field given once, as text; empty (an untouched field) is `null`. */
export function formText(form: Form, name: string, field = name): string | null {
  const value = form[name];
  if (value === undefined || value === '') return null;
  if (typeof value !== 'string') throw invalidArgument(field, 'give it once');
  return value;
}

/** The typed values of a form, to show again (never the CSRF token). */
export function typedValues(form: Form): Record<string, string> {
  return Object.fromEntries(
    Object.entries(form).flatMap(([name, value]) =>
      name !== '_csrf' && typeof value === 'string' ? [[name, value]] : [],
    ),
  );
}

/** A whole number field (digits only), or `null` when left empty. The engine checks its range. */
export function formInteger(form: Form, name: string, field = name): number | null {
  const value = formText(form, name, field)?.trim() ?? null;
  if (value === null || value === '') return null;
  if (!/^\d{1,15}$/.test(value)) throw invalidArgument(field, `"${value.slice(0, 32)}" is not a whole number`);
  return Number(value);
}

/**
 * Where a control applies, as its form's `scope` field says: `everywhere`, `system` or
 * `tenant:<id>`; left out, the caller's own (a tenant token's scope).
 */
export function formScope(form: Form): { requested: RequestedScope; everywhere: boolean } {
  const where = formText(form, 'scope');
  if (where === null) return { requested: null, everywhere: false };
  if (where === 'everywhere') return { requested: null, everywhere: true };
  if (where === 'system') return { requested: { system: true }, everywhere: false };
  if (where.startsWith('tenant:') && where.length > 7)
    return { requested: { tenant: where.slice(7) }, everywhere: false };
  throw invalidArgument('scope', 'must be everywhere, system or tenant:<id>');
}

/** A scope as the forms write it back: `system` or `tenant:<id>`. */
export function scopeValue(scope: Schedule['scope']): string {
  return scope.type === 'system' ? 'system' : `tenant:${scope.tenant}`;
}

export const LIMIT_FIELDS = ['_csrf', 'kind_prefix', 'concurrency', 'rate'] as const;

/** A kind limit to set: the prefix, and at least one of a concurrency and a rate (the engine says so if neither). */
export function limitForm(form: Form): { kindPrefix: string; concurrency: number | null; rate: string | null } {
  onlyKnown(form, LIMIT_FIELDS);
  return {
    kindPrefix: formText(form, 'kind_prefix') ?? '',
    concurrency: formInteger(form, 'concurrency'),
    rate: formText(form, 'rate')?.trim() || null,
  };
}

export const TENANT_LIMIT_FIELDS = ['_csrf', 'tenant', 'concurrency', 'rate', 'weight'] as const;

/** A tenant limit to set: the tenant, and any of a concurrency, a rate and a weight (the engine says so if none). */
export function tenantLimitForm(form: Form): {
  tenant: string;
  concurrency: number | null;
  rate: string | null;
  weight?: number;
} {
  onlyKnown(form, TENANT_LIMIT_FIELDS);
  const weight = formInteger(form, 'weight');
  return {
    tenant: formText(form, 'tenant')?.trim() ?? '',
    concurrency: formInteger(form, 'concurrency'),
    rate: formText(form, 'rate')?.trim() || null,
    ...(weight === null ? {} : { weight }),
  };
}

/** The fields of the schedule form, as posted to create (`paused` too) or update one. */
export const SCHEDULE_FIELDS = [
  '_csrf',
  'scope',
  'name',
  'cron',
  'timezone',
  'every_secs',
  'kind',
  'payload',
  'priority',
  'max_attempts',
  'timeout_secs',
  'paused',
] as const;

/** The job template the form gives; the payload is text (stored as its UTF-8 bytes). */
function templateForm(form: Form): ScheduleJobInput {
  const payload = formText(form, 'payload', 'job.payload');
  const priority = formInteger(form, 'priority', 'job.priority');
  const maxAttempts = formInteger(form, 'max_attempts', 'job.max_attempts');
  const timeoutSecs = formInteger(form, 'timeout_secs', 'job.timeout_secs');
  return {
    kind: formText(form, 'kind', 'job.kind')?.trim() ?? '',
    ...(payload === null ? {} : { payload }),
    ...(priority === null ? {} : { priority }),
    ...(maxAttempts === null ? {} : { maxAttempts }),
    ...(timeoutSecs === null ? {} : { timeoutSecs }),
  };
}

type Timing = Pick<NewSchedule, 'cron' | 'timezone' | 'everySecs'>;

function timingForm(form: Form): Timing {
  const cron = formText(form, 'cron')?.trim() || null;
  const timezone = formText(form, 'timezone')?.trim() || null;
  const everySecs = formInteger(form, 'every_secs');
  return {
    ...(cron === null ? {} : { cron }),
    // A time zone left in the form beside an interval means nothing; only a cron reads it.
    ...(timezone === null || (cron === null && everySecs !== null) ? {} : { timezone }),
    ...(everySecs === null ? {} : { everySecs }),
  };
}

/** A schedule to create from the form. */
export function newScheduleForm(form: Form): NewSchedule {
  onlyKnown(form, SCHEDULE_FIELDS);
  const paused = formText(form, 'paused');
  return {
    name: formText(form, 'name')?.trim() ?? '',
    ...timingForm(form),
    job: templateForm(form),
    ...(paused === null ? {} : { paused: paused === 'on' || paused === '1' }),
  };
}

/**
 * The changes the edit form makes to `current`: its timing only when it differs (so an untouched
 * timing keeps the next due time), and the job template, replaced whole. A schedule whose payload
 * is not text has no payload field in the form, and keeps its payload.
 */
export function scheduleChangesForm(form: Form, current: Schedule): ScheduleChanges {
  onlyKnown(form, SCHEDULE_FIELDS);
  const timing = timingForm(form);
  const same =
    (timing.cron ?? null) === current.cron &&
    (timing.everySecs ?? null) === current.everySecs &&
    (timing.cron === undefined || (timing.timezone ?? 'UTC') === (current.timezone ?? 'UTC'));
  const job = templateForm(form);
  const keepPayload = form['payload'] === undefined && payloadText(current.job.payload) === null;
  return {
    ...(same ? {} : timing),
    job: keepPayload ? { ...job, payload: current.job.payload } : job,
  };
}

/** A payload as the form's text, or `null` when it is not UTF-8 text (the form then leaves it as it is). */
export function payloadText(payload: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(payload);
  } catch {
    return null;
  }
}
