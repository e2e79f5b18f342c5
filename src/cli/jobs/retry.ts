/**
 * `telha jobs retry`: move Dead jobs back to Pending with their attempts
 * reset (operators), named by id or chosen by a filter (every Dead job of a
 * scope, optionally of a kind), each on its own: one that cannot be retried
 * is reported and the others still move.
 */
import type { RemoteJob } from '../../client/convert.ts';
import { ErrorCode, isTelhaError, type TelhaError } from '../../core/errors.ts';
import { JOB_STATE_NAMES, JobState } from '../../core/types.ts';
import { requiredScope, type ScopeOptions } from '../args.ts';
import { jobJson } from '../format.ts';
import { printLine, UsageError, type CliIo, type OperatorClient } from '../io.ts';

export interface RetryOptions extends ScopeOptions {
  readonly ids: readonly string[];
  /** Retry every Dead job of the scope (and `kindPrefix`) instead of named ones. */
  readonly dead?: boolean;
  readonly kindPrefix?: string;
  readonly json?: boolean;
}

/** Dead jobs listed, and retried together, per round trip of the filter form. */
const PAGE_SIZE = 100;

/** Answers about one job; any other error (the server away, no permission) ends the command. */
const JOB_ERRORS: ReadonlySet<string> = new Set([
  ErrorCode.NotFound,
  ErrorCode.FailedPrecondition,
  ErrorCode.InvalidArgument,
]);

export async function retryJobs(options: RetryOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const retried: RemoteJob[] = [];
  const failed: { readonly jobId: string; readonly error: TelhaError }[] = [];
  const retryEach = async (ids: readonly string[]): Promise<void> => {
    const outcomes = await Promise.allSettled(ids.map((id) => client.retry(id)));
    outcomes.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') {
        retried.push(outcome.value);
        if (!options.json) {
          const job = outcome.value;
          printLine(io.stdout, `retried ${job.jobId}: ${JOB_STATE_NAMES[job.state]}, attempts ${job.attempts}`);
        }
        return;
      }
      const error: unknown = outcome.reason;
      if (!isTelhaError(error) || !JOB_ERRORS.has(error.code)) throw error;
      failed.push({ jobId: ids[i] as string, error });
      printLine(io.stderr, `error: ${error.code}: ${error.message}`);
    });
  };

  let tried: number;
  if (options.dead) {
    if (options.ids.length > 0) throw new UsageError('name jobs by id or choose them with --dead, not both');
    const scope = requiredScope(options, 'jobs retry --dead');
    let pageToken: string | null = null;
    do {
      // Retried jobs leave the Dead range, so the token (a position in it) still points past this page.
      const page = await client.list({
        scope,
        state: JobState.Dead,
        ...(options.kindPrefix ? { kindPrefix: options.kindPrefix } : {}),
        limit: PAGE_SIZE,
        ...(pageToken === null ? {} : { pageToken }),
      });
      await retryEach(page.jobs.map((job) => job.jobId));
      pageToken = page.nextPageToken;
    } while (pageToken !== null);
    tried = retried.length + failed.length;
    if (!options.json) printLine(io.stdout, `retried ${retried.length} of ${tried} dead jobs`);
  } else {
    if (options.ids.length === 0)
      throw new UsageError('name the jobs to retry (<id...>), or choose them with --dead and --tenant or --system');
    if (options.kindPrefix !== undefined || options.tenant !== undefined || options.system)
      throw new UsageError('--kind-prefix, --tenant and --system choose dead jobs: use them with --dead');
    await retryEach(options.ids);
    tried = options.ids.length;
    if (!options.json && tried > 1) printLine(io.stdout, `retried ${retried.length} of ${tried} jobs`);
  }
  if (options.json) {
    printLine(io.stdout, {
      retried: retried.map(jobJson),
      failed: failed.map(({ jobId, error }) => ({ jobId, code: error.code, message: error.message })),
    });
  }
  return failed.length === 0 ? 0 : 1;
}
