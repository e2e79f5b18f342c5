/**
 * `Queue.cancelMatching`: cancel every Pending or Leased job matching a filter, a page at a time.
 */
import { invalidArgument, notFound } from '../core/errors.ts';
import { assertInScope } from '../core/scope.ts';
import * as transitions from '../core/transitions.ts';
import { ANY_SCOPE, JobState, type JobRecord, type ListPage } from '../core/types.ts';
import { checkIntegerInRange, checkKindPrefix, checkScope } from '../core/validate.ts';
import type { WriteContext } from './job-writes.ts';
import type { CancelMatchingOptions, CancelOptions } from './queue-options.ts';

/** Jobs `cancelMatching` reads and cancels per pass of the store. */
const CANCEL_PAGE = 100;

/**
 * Cancel every Pending or Leased job matching a filter, as `cancel` would,
 * a page at a time (each job its own atomic write, a page in one pass of the
 * store). A job that moved on between the scan and its write (completed,
 * cancelled by someone else) is skipped. Returns how many were cancelled.
 */
export async function cancelMatching(ctx: WriteContext, options: CancelMatchingOptions): Promise<number> {
  ctx.assertOpen();
  const scope = options.scope ?? ANY_SCOPE;
  if (scope.type !== 'any') checkScope(scope);
  const kindPrefix = options.kindPrefix === undefined ? null : checkKindPrefix(options.kindPrefix);
  if (scope.type === 'any' && (kindPrefix ?? '') === '') {
    // One call that stops every job of every tenant is far more often a slip than a wish.
    throw invalidArgument('kind_prefix', 'is required to cancel across every scope (or name a scope)');
  }
  const states = options.states ?? [JobState.Pending, JobState.Leased];
  for (const state of states) {
    if (state !== JobState.Pending && state !== JobState.Leased) {
      throw invalidArgument('state', 'only pending and leased jobs can be cancelled');
    }
  }
  const limit =
    options.limit === undefined
      ? Number.MAX_SAFE_INTEGER
      : checkIntegerInRange('limit', options.limit, 1, Number.MAX_SAFE_INTEGER);
  const request = cancelRequest(options);
  let cancelled = 0;
  for (const state of new Set(states)) {
    let pageToken: string | null = null;
    do {
      const page: ListPage = await ctx.store.list({
        scope,
        state,
        kindPrefix,
        limit: Math.min(CANCEL_PAGE, limit - cancelled),
        pageToken,
        order: 'oldest_first',
        includeSystem: true,
      });
      const now = ctx.clock.now();
      const results = await ctx.store.updateMany(
        page.jobs.map((job) => ({
          jobId: job.jobId,
          change: (current: JobRecord) => {
            // Re-checked on the current record: the scan and the write are not one snapshot.
            assertInScope(current, scope);
            if (current.state !== state) throw notFound(`job ${current.jobId} in state ${state}`);
            return { record: transitions.cancel(current, request, now) };
          },
        })),
        now,
      );
      const written = results.flatMap((result) => (result.ok ? [result.value] : []));
      ctx.transitioned('cancel', written, state, now);
      cancelled += written.length;
      pageToken = page.nextPageToken;
    } while (pageToken !== null && cancelled < limit);
    if (cancelled >= limit) break;
  }
  return cancelled;
}

/** A cancel's who and why, checked. */
export function cancelRequest(options: CancelOptions): transitions.CancelRequest {
  if (options.reason !== undefined && typeof options.reason !== 'string') {
    throw invalidArgument('reason', 'must be a string');
  }
  return { by: options.by ?? null, reason: options.reason ?? null };
}
