/**
 * `telha jobs retry`, `telha jobs discard` and `telha jobs run-now`: one operator's call on
 * each job named by id, or (retry and discard) on every Dead job chosen by a filter (a scope,
 * optionally a kind), which `--dead` must ask for by name, since it may change many jobs at
 * once. Each job on its own: one that cannot be moved is reported and the others still move.
 */
import type { RemoteJob } from '../../client/convert.ts';
import { ErrorCode, isTelhaError, type TelhaError } from '../../core/errors.ts';
import { JOB_STATE_NAMES, JobState } from '../../core/types.ts';
import { requiredScope, type ScopeOptions } from '../args.ts';
import { jobJson } from '../format.ts';
import { printLine, UsageError, type CliIo, type OperatorClient } from '../io.ts';

export interface RetryOptions extends ScopeOptions {
  readonly ids: readonly string[];
  /** Act on every Dead job of the scope (and `kindPrefix`) instead of named ones. */
  readonly dead?: boolean;
  readonly kindPrefix?: string;
  readonly json?: boolean;
  /** Why, kept in each job's event (discard). */
  readonly reason?: string;
}

/** What one command does to one job, and the words it reports it in. */
interface JobAction {
  readonly command: string;
  /** `retried`, `discarded`: the report's verb and the JSON key of the jobs moved. */
  readonly done: string;
  /** Whether `--dead` may choose the jobs (else only ids name them). */
  readonly byFilter: boolean;
  readonly call: (client: OperatorClient, jobId: string, options: RetryOptions) => Promise<RemoteJob>;
}

const RETRY: JobAction = {
  command: 'retry',
  done: 'retried',
  byFilter: true,
  call: (client, id) => client.retry(id),
};

const DISCARD: JobAction = {
  command: 'discard',
  done: 'discarded',
  byFilter: true,
  call: (client, id, options) => client.discard(id, options.reason === undefined ? {} : { reason: options.reason }),
};

const RUN_NOW: JobAction = {
  command: 'run-now',
  done: 'ready',
  byFilter: false,
  call: (client, id) => client.runNow(id),
};

export function retryJobs(options: RetryOptions, client: OperatorClient, io: CliIo): Promise<number> {
  return actOnJobs(RETRY, options, client, io);
}

/** Give up on Dead jobs: each moves to Cancelled with a `discarded` event, kept until retention prunes it. */
export function discardJobs(options: RetryOptions, client: OperatorClient, io: CliIo): Promise<number> {
  return actOnJobs(DISCARD, options, client, io);
}

/** Make delayed or backing-off Pending jobs ready now. */
export function runJobsNow(options: RetryOptions, client: OperatorClient, io: CliIo): Promise<number> {
  return actOnJobs(RUN_NOW, options, client, io);
}

/** Dead jobs listed, and retried together, per round trip of the filter form. */
const PAGE_SIZE = 100;

/** Answers about one job; any other error (the server away, no permission) ends the command. */
const JOB_ERRORS: ReadonlySet<string> = new Set([
  ErrorCode.NotFound,
  ErrorCode.FailedPrecondition,
  ErrorCode.InvalidArgument,
]);

async function actOnJobs(action: JobAction, options: RetryOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const retried: RemoteJob[] = [];
  const failed: { readonly jobId: string; readonly error: TelhaError }[] = [];
  const retryEach = async (ids: readonly string[]): Promise<void> => {
    const outcomes = await Promise.allSettled(ids.map((id) => action.call(client, id, options)));
    outcomes.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') {
        retried.push(outcome.value);
        if (!options.json) {
          const job = outcome.value;
          printLine(io.stdout, `${action.done} ${job.jobId}: ${JOB_STATE_NAMES[job.state]}, attempts ${job.attempts}`);
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
    if (!action.byFilter) throw new UsageError(`jobs ${action.command} takes job ids only`);
    if (options.ids.length > 0) throw new UsageError('name jobs by id or choose them with --dead, not both');
    const scope = requiredScope(options, `jobs ${action.command} --dead`);
    let pageToken: string | null = null;
    do {
      // Jobs moved leave the Dead range, so the token (a position in it) still points past this page.
      const page = await client.list({
        scope,
        state: JobState.Dead,
        ...(options.kindPrefix ? { kindPrefix: options.kindPrefix } : {}),
        limit: PAGE_SIZE,
        order: 'oldest_first',
        ...(pageToken === null ? {} : { pageToken }),
      });
      await retryEach(page.jobs.map((job) => job.jobId));
      pageToken = page.nextPageToken;
    } while (pageToken !== null);
    tried = retried.length + failed.length;
    if (!options.json) printLine(io.stdout, `${action.done} ${retried.length} of ${tried} dead jobs`);
  } else {
    if (options.ids.length === 0) {
      throw new UsageError(
        action.byFilter
          ? `name the jobs to ${action.command} (<id...>), or choose them with --dead and --tenant or --system`
          : `name the jobs to ${action.command} (<id...>)`,
      );
    }
    if (options.kindPrefix !== undefined || options.tenant !== undefined || options.system)
      throw new UsageError('--kind-prefix, --tenant and --system choose dead jobs: use them with --dead');
    await retryEach(options.ids);
    tried = options.ids.length;
    if (!options.json && tried > 1) printLine(io.stdout, `${action.done} ${retried.length} of ${tried} jobs`);
  }
  if (options.json) {
    printLine(io.stdout, {
      [action.done]: retried.map(jobJson),
      failed: failed.map(({ jobId, error }) => ({ jobId, code: error.code, message: error.message })),
    });
  }
  return failed.length === 0 ? 0 : 1;
}
