/** `telha jobs list`: jobs newest first (or oldest first), a page at a time or every page. */
import type { RemoteJob } from '../../client/convert.ts';
import type { JobState } from '../../core/types.ts';
import { scopeOf, type ScopeOptions } from '../args.ts';
import { formatList, jobJson } from '../format.ts';
import { printLine, type CliIo, type OperatorClient } from '../io.ts';

export interface ListJobsOptions extends ScopeOptions {
  readonly state?: JobState;
  readonly kindPrefix?: string;
  /** Page size, 1-1,000. */
  readonly limit: number;
  readonly pageToken?: string;
  /** Follow every page. */
  readonly all?: boolean;
  readonly oldestFirst?: boolean;
  /** Across every scope, the system scope's jobs too. */
  readonly includeSystem?: boolean;
  readonly json?: boolean;
}

export async function listJobs(options: ListJobsOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const scope = scopeOf(options);
  const jobs: RemoteJob[] = [];
  let pageToken = options.pageToken;
  let next: string | null = null;
  do {
    const page = await client.list({
      ...(scope ? { scope } : {}),
      ...(options.state === undefined ? {} : { state: options.state }),
      ...(options.kindPrefix ? { kindPrefix: options.kindPrefix } : {}),
      limit: options.limit,
      ...(pageToken ? { pageToken } : {}),
      ...(options.oldestFirst ? { order: 'oldest_first' as const } : {}),
      ...(options.includeSystem ? { includeSystem: true } : {}),
    });
    jobs.push(...page.jobs);
    next = page.nextPageToken;
    pageToken = next ?? undefined;
  } while (options.all && next !== null);
  if (options.json) printLine(io.stdout, { jobs: jobs.map(jobJson), nextPageToken: next });
  else {
    printLine(io.stdout, formatList(jobs));
    if (next !== null) printLine(io.stderr, `more: --page-token ${next}`);
  }
  return 0;
}
