/** `telha schedules show <name>`: one schedule, field by field. */
import { requiredScope, scopeOf, type ScopeOptions } from '../args.ts';
import { printLine, type CliIo, type OperatorClient } from '../io.ts';
import { formatSchedule, scheduleJson } from './format.ts';

export interface NamedScheduleOptions extends ScopeOptions {
  readonly name: string;
  readonly json?: boolean;
  readonly withToken: boolean;
}

export async function showSchedule(options: NamedScheduleOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const scope = options.withToken ? scopeOf(options) : requiredScope(options, 'schedules show');
  const schedule = await client.getSchedule(options.name, scope);
  printLine(io.stdout, options.json ? scheduleJson(schedule) : formatSchedule(schedule));
  return 0;
}
