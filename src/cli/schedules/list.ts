/** `telha schedules list`: schedules by scope, then name, a page at a time or every page. */
import type { Schedule } from '../../core/schedules.ts';
import { scopeOf, type ScopeOptions } from '../args.ts';
import { printLine, type CliIo, type OperatorClient } from '../io.ts';
import { formatSchedules, scheduleJson } from './format.ts';

export interface ListSchedulesOptions extends ScopeOptions {
  readonly limit: number;
  readonly pageToken?: string;
  readonly all?: boolean;
  readonly json?: boolean;
}

export async function listSchedules(options: ListSchedulesOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const scope = scopeOf(options);
  const schedules: Schedule[] = [];
  let pageToken = options.pageToken;
  let next: string | null = null;
  do {
    const page = await client.listSchedules({
      ...(scope ? { scope } : {}),
      limit: options.limit,
      ...(pageToken ? { pageToken } : {}),
    });
    schedules.push(...page.schedules);
    next = page.nextPageToken;
    pageToken = next ?? undefined;
  } while (options.all && next !== null);
  if (options.json) printLine(io.stdout, { schedules: schedules.map(scheduleJson), nextPageToken: next });
  else {
    printLine(io.stdout, formatSchedules(schedules));
    if (next !== null) printLine(io.stderr, `more: --page-token ${next}`);
  }
  return 0;
}
