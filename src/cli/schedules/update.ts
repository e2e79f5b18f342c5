/** `telha schedules update|pause|resume <name>`: change some fields of a schedule. */
import type { ScheduleChanges } from '../../core/schedules.ts';
import { requiredScope, scopeOf, type ScopeOptions } from '../args.ts';
import { printLine, UsageError, type CliIo, type OperatorClient } from '../io.ts';
import { templateOf, type TemplateOptions } from './create.ts';
import { formatSchedule, scheduleJson } from './format.ts';

export interface UpdateScheduleOptions extends ScopeOptions, TemplateOptions {
  readonly name: string;
  readonly cron?: string;
  readonly timezone?: string;
  readonly every?: number;
  /** Set by `pause` (true) and `resume` (false). */
  readonly paused?: boolean;
  readonly json?: boolean;
  readonly withToken: boolean;
}

export async function updateSchedule(
  options: UpdateScheduleOptions,
  client: OperatorClient,
  io: CliIo,
): Promise<number> {
  const scope = options.withToken ? scopeOf(options) : requiredScope(options, 'schedules update');
  const templateFlags = [options.payload, options.priority, options.maxAttempts, options.timeoutSecs];
  if (options.kind === undefined && templateFlags.some((flag) => flag !== undefined)) {
    throw new UsageError('a new job template needs --kind (the template is replaced whole)');
  }
  const changes: ScheduleChanges = {
    ...(options.cron === undefined ? {} : { cron: options.cron }),
    ...(options.timezone === undefined ? {} : { timezone: options.timezone }),
    ...(options.every === undefined ? {} : { everySecs: options.every }),
    ...(options.kind === undefined ? {} : { job: templateOf({ ...options, kind: options.kind }) }),
    ...(options.paused === undefined ? {} : { paused: options.paused }),
  };
  if (Object.keys(changes).length === 0)
    throw new UsageError('nothing to change: give --cron, --every, --timezone or --kind');
  const schedule = await client.updateSchedule(options.name, changes, scope);
  printLine(io.stdout, options.json ? scheduleJson(schedule) : formatSchedule(schedule));
  return 0;
}
