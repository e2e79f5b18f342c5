/** How the `telha schedules` commands print a schedule: a table row, a block, or JSON. */
import type { Schedule } from '../../core/schedules.ts';
import type { Micros } from '../../core/types.ts';
import { formatTable, preview, time } from '../format.ts';

function when(at: Micros | null): string {
  return at === null ? '-' : time(at);
}

function scopeName(schedule: Schedule): string {
  return schedule.scope.type === 'tenant' ? schedule.scope.tenant : '(system)';
}

/** `0 2 * * * Europe/Berlin`, or `every 60s`. */
function timing(schedule: Schedule): string {
  return schedule.cron === null
    ? `every ${schedule.everySecs ?? 0}s`
    : `${schedule.cron} ${schedule.timezone ?? 'UTC'}`;
}

/** One line per schedule, for a terminal. */
export function formatSchedules(schedules: readonly Schedule[]): string {
  if (schedules.length === 0) return '(no schedules)';
  const rows = [
    ['SCOPE', 'NAME', 'WHEN', 'KIND', 'STATE', 'NEXT DUE', 'LAST DUE'],
    ...schedules.map((s) => [
      scopeName(s),
      s.name,
      timing(s),
      s.job.kind,
      s.paused ? 'paused' : 'active',
      when(s.nextDueAt),
      when(s.lastDueAt),
    ]),
  ];
  return formatTable(rows);
}

/** One schedule, field by field. */
export function formatSchedule(schedule: Schedule): string {
  const { job } = schedule;
  return [
    `schedule ${schedule.name} (${scopeName(schedule)})`,
    `  when       ${timing(schedule)}`,
    `  state      ${schedule.paused ? 'paused' : 'active'}`,
    `  next due   ${when(schedule.nextDueAt)}`,
    `  last due   ${when(schedule.lastDueAt)}`,
    `  job        ${job.kind} priority=${job.priority}` +
      (job.maxAttempts === null ? '' : ` max_attempts=${job.maxAttempts}`) +
      (job.timeoutSecs === null ? '' : ` timeout_secs=${job.timeoutSecs}`),
    `  payload    ${preview(job.payload)}`,
    `  created    ${when(schedule.createdAt)}`,
    `  updated    ${when(schedule.updatedAt)}`,
  ].join('\n');
}

/** A schedule for `--json`, as `jobJson` prints a job: the record's fields, its payload as base64 plus a UTF-8 copy when it reads as text. */
export function scheduleJson(schedule: Schedule): object {
  const payload = Buffer.from(schedule.job.payload);
  const text = payload.toString('utf8');
  return {
    ...schedule,
    job: {
      ...schedule.job,
      payload: payload.toString('base64'),
      payloadText: text.includes('\uFFFD') ? null : text,
    },
  };
}
