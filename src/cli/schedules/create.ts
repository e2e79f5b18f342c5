/** `telha schedules create <name>`: a job enqueued at each due time of a cron expression or an interval. */
import type { ScheduleJobInput } from '../../core/schedules.ts';
import { readPayload, requiredScope, scopeOf, type ScopeOptions } from '../args.ts';
import { printLine, type CliIo, type OperatorClient } from '../io.ts';
import { formatSchedule, scheduleJson } from './format.ts';

/** The job template flags, shared by `create` and `update`. */
export interface TemplateOptions {
  readonly kind?: string;
  /** JSON text, or `@path` for a file's raw bytes. */
  readonly payload?: string;
  readonly priority?: number;
  readonly maxAttempts?: number;
  readonly timeoutSecs?: number;
}

export interface CreateScheduleOptions extends ScopeOptions, TemplateOptions {
  readonly name: string;
  readonly cron?: string;
  readonly timezone?: string;
  /** `--every <secs>`. */
  readonly every?: number;
  readonly paused?: boolean;
  readonly json?: boolean;
  /** Whether the call carries a token: a tenant's names its own scope; otherwise the flags must. */
  readonly withToken: boolean;
}

/** The template the flags describe; `kind` is the one flag it cannot do without. */
export function templateOf(options: TemplateOptions & { readonly kind: string }): ScheduleJobInput {
  const payload = readPayload(options.payload);
  return {
    kind: options.kind,
    ...(payload ? { payload } : {}),
    ...(options.priority === undefined ? {} : { priority: options.priority }),
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
    ...(options.timeoutSecs === undefined ? {} : { timeoutSecs: options.timeoutSecs }),
  };
}

export async function createSchedule(
  options: CreateScheduleOptions & { readonly kind: string },
  client: OperatorClient,
  io: CliIo,
): Promise<number> {
  const scope = options.withToken ? scopeOf(options) : requiredScope(options, 'schedules create');
  const schedule = await client.createSchedule(
    {
      name: options.name,
      ...(options.cron === undefined ? {} : { cron: options.cron }),
      ...(options.timezone === undefined ? {} : { timezone: options.timezone }),
      ...(options.every === undefined ? {} : { everySecs: options.every }),
      job: templateOf(options),
      ...(options.paused ? { paused: true } : {}),
    },
    scope,
  );
  printLine(io.stdout, options.json ? scheduleJson(schedule) : formatSchedule(schedule));
  return 0;
}
