/** `telha schedules delete <name>`: the jobs it enqueued stay. */
import { requiredScope, scopeOf } from '../args.ts';
import { printLine, type CliIo, type OperatorClient } from '../io.ts';
import type { NamedScheduleOptions } from './show.ts';

export async function deleteSchedule(
  options: NamedScheduleOptions,
  client: OperatorClient,
  io: CliIo,
): Promise<number> {
  const scope = options.withToken ? scopeOf(options) : requiredScope(options, 'schedules delete');
  await client.deleteSchedule(options.name, scope);
  printLine(io.stdout, `deleted schedule ${options.name}`);
  return 0;
}
