/** `telha schedules run <name>`: enqueue a schedule's job now; its next due time stays. */
import { requiredScope, scopeOf } from '../args.ts';
import { jobJson } from '../format.ts';
import { printLine, type CliIo, type OperatorClient } from '../io.ts';
import type { NamedScheduleOptions } from './show.ts';

export async function runSchedule(options: NamedScheduleOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const scope = options.withToken ? scopeOf(options) : requiredScope(options, 'schedules run');
  const result = await client.runSchedule(options.name, scope);
  if (options.json) printLine(io.stdout, { created: result.created, job: jobJson(result.job) });
  else printLine(io.stdout, result.job.jobId);
  return 0;
}
