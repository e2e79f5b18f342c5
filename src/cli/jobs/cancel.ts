/**
 * `telha jobs cancel`: stop Pending and Leased jobs (operators, or a tenant in
 * its own scope), named by id, each on its own (one that cannot be cancelled
 * is reported and the others still go), or chosen by a filter (a kind prefix,
 * optionally a state and a scope), which the server applies job by job.
 */
import type { RemoteJob } from '../../client/convert.ts';
import { ErrorCode, isTelhaError, type TelhaError } from '../../core/errors.ts';
import { JobState } from '../../core/types.ts';
import { scopeOf, type ScopeOptions } from '../args.ts';
import { jobJson } from '../format.ts';
import { printLine, UsageError, type CliIo, type OperatorClient } from '../io.ts';

export interface CancelOptions extends ScopeOptions {
  readonly ids: readonly string[];
  /** Cancel every Pending or Leased job whose kind starts with this, instead of named ones. */
  readonly kindPrefix?: string;
  /** With `kindPrefix`: only `pending` or only `leased` jobs; default both. */
  readonly state?: 'pending' | 'leased';
  /** Kept in each job's `cancelled` event (by id only). */
  readonly reason?: string;
  readonly json?: boolean;
}

/** The states a filter may name: only live jobs can be cancelled. */
export const CANCELLABLE_STATES = { pending: JobState.Pending, leased: JobState.Leased } as const;

/** Answers about one job; any other error (the server away, no permission) ends the command. */
const JOB_ERRORS: ReadonlySet<string> = new Set([
  ErrorCode.NotFound,
  ErrorCode.FailedPrecondition,
  ErrorCode.InvalidArgument,
]);

export async function cancelJobs(options: CancelOptions, client: OperatorClient, io: CliIo): Promise<number> {
  if (options.kindPrefix !== undefined) {
    if (options.ids.length > 0) throw new UsageError('name jobs by id or choose them with --kind-prefix, not both');
    const scope = scopeOf(options);
    const cancelled = await client.cancelMatching({
      kindPrefix: options.kindPrefix,
      ...(scope === undefined ? {} : { scope }),
      ...(options.state === undefined ? {} : { state: CANCELLABLE_STATES[options.state] }),
    });
    printLine(io.stdout, options.json ? { cancelled } : `cancelled ${cancelled} jobs`);
    return 0;
  }
  if (options.ids.length === 0) {
    throw new UsageError('name the jobs to cancel (<id...>), or choose them with --kind-prefix');
  }
  if (options.state !== undefined || options.tenant !== undefined || options.system) {
    throw new UsageError('--state, --tenant and --system choose jobs: use them with --kind-prefix');
  }
  const cancelled: RemoteJob[] = [];
  const failed: { readonly jobId: string; readonly error: TelhaError }[] = [];
  const reason = options.reason === undefined ? {} : { reason: options.reason };
  const outcomes = await Promise.allSettled(options.ids.map((id) => client.cancel(id, reason)));
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') {
      cancelled.push(outcome.value);
      if (!options.json) printLine(io.stdout, `cancelled ${outcome.value.jobId}`);
      return;
    }
    const error: unknown = outcome.reason;
    if (!isTelhaError(error) || !JOB_ERRORS.has(error.code)) throw error;
    failed.push({ jobId: options.ids[i] as string, error });
    printLine(io.stderr, `error: ${error.code}: ${error.message}`);
  });
  if (options.json) {
    printLine(io.stdout, {
      cancelled: cancelled.map(jobJson),
      failed: failed.map(({ jobId, error }) => ({ jobId, code: error.code, message: error.message })),
    });
  } else if (options.ids.length > 1) {
    printLine(io.stdout, `cancelled ${cancelled.length} of ${options.ids.length} jobs`);
  }
  return failed.length === 0 ? 0 : 1;
}
