/** How the `telha schedules` commands print a schedule: a table row, a block, or JSON. */
import type { Schedule } from '../../core/schedules.ts';
import type { Micros } from '../../core/types.ts';
import { preview } from '../format.ts';

function when(at: Micros | null): string {
  return at === null ? '-' : new Date(Math.floor(at / 1000)).toISOString();
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
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((row) => (row[c] ?? '').length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, c) => cell.padEnd(widths[c] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
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

/** A schedule as JSON: times as ISO text and µs, the payload as UTF-8 text when it is that, else base64. */
export function scheduleJson(schedule: Schedule): object {
  const payload = Buffer.from(schedule.job.payload);
  const text = payload.toString('utf8');
  return {
    scope: schedule.scope.type === 'tenant' ? { tenant: schedule.scope.tenant } : { system: true },
    name: schedule.name,
    cron: schedule.cron,
    timezone: schedule.timezone,
    every_secs: schedule.everySecs,
    job: {
      kind: schedule.job.kind,
      ...(Buffer.from(text, 'utf8').equals(payload)
        ? { payload: text }
        : { payload_base64: payload.toString('base64') }),
      priority: schedule.job.priority,
      max_attempts: schedule.job.maxAttempts,
      timeout_secs: schedule.job.timeoutSecs,
    },
    paused: schedule.paused,
    next_due_at: schedule.nextDueAt === null ? null : when(schedule.nextDueAt),
    last_due_at: schedule.lastDueAt === null ? null : when(schedule.lastDueAt),
    created_at: when(schedule.createdAt),
    updated_at: when(schedule.updatedAt),
  };
}
