/**
 * The jobs list over the store's pages, and the operator actions, each
 * through the same engine call (and so the same audit trail) as gRPC.
 *
 * The store pages in key order (scope, state, priority, created_at) and
 * filters by scope, state and kind prefix itself. It has no index on time
 * alone, so a created-before/after filter is applied to the rows of each
 * page: one request reads at most {@link MAX_SCANNED_ROWS} rows and, when a
 * filter matches few of them, returns fewer rows with a token to read on.
 */
import { ErrorCode, isTelhaError } from '../core/errors.ts';
import { JobState, type JobRecord, type ScopeFilter } from '../core/types.ts';
import type { Queue } from '../engine/queue.ts';
import type { JobFilter, ListParams } from './params.ts';

/** Rows one list request reads from the store at most, when a time filter skips rows. */
export const MAX_SCANNED_ROWS = 5_000;
/** Dead jobs one "retry all" confirmation counts and retries at most; run it again for more. */
export const MAX_BULK_JOBS = 10_000;
const STORE_PAGE = 1_000;

export interface JobsPage {
  readonly jobs: readonly JobRecord[];
  readonly nextPageToken: string | null;
  /** Rows read from the store for this page (more than shown when a time filter skipped some). */
  readonly scanned: number;
}

function matchesTime(job: JobRecord, filter: JobFilter): boolean {
  return (
    (filter.createdAfter === null || job.createdAt >= filter.createdAfter) &&
    (filter.createdBefore === null || job.createdAt < filter.createdBefore)
  );
}

/** One page of the list: `limit` matching rows at most, never more than {@link MAX_SCANNED_ROWS} read. */
export async function listJobs(queue: Queue, scope: ScopeFilter, params: ListParams): Promise<JobsPage> {
  const jobs: JobRecord[] = [];
  let pageToken = params.pageToken;
  let scanned = 0;
  do {
    // Never ask for more rows than still fit on the page: the token then resumes right after the last row read.
    const page = await queue.list({
      scope,
      ...(params.state === null ? {} : { state: params.state }),
      ...(params.kind === null ? {} : { kindPrefix: params.kind }),
      order: params.order,
      ...(params.includeSystem ? { includeSystem: true } : {}),
      limit: params.limit - jobs.length,
      ...(pageToken === null ? {} : { pageToken }),
    });
    scanned += page.jobs.length;
    for (const job of page.jobs) if (matchesTime(job, params)) jobs.push(job);
    pageToken = page.nextPageToken;
  } while (pageToken !== null && jobs.length < params.limit && scanned < MAX_SCANNED_ROWS);
  return { jobs, nextPageToken: pageToken, scanned };
}

/** Each Dead job matching `filter` in `scope`, up to {@link MAX_BULK_JOBS}, page by page. */
async function* deadJobs(queue: Queue, scope: ScopeFilter, filter: JobFilter, cap: number): AsyncGenerator<JobRecord> {
  let pageToken: string | null = null;
  let seen = 0;
  do {
    const page = await queue.list({
      scope,
      state: JobState.Dead,
      ...(filter.kind === null ? {} : { kindPrefix: filter.kind }),
      ...(filter.includeSystem ? { includeSystem: true } : {}),
      order: 'oldest_first',
      limit: STORE_PAGE,
      ...(pageToken === null ? {} : { pageToken }),
    });
    for (const job of page.jobs) {
      if (!matchesTime(job, filter)) continue;
      if (seen++ >= cap) return;
      yield job;
    }
    pageToken = page.nextPageToken;
  } while (pageToken !== null);
}

/** How many Dead jobs a "retry all" would retry now; `MAX_BULK_JOBS + 1` means more than it will take. */
export async function countDead(queue: Queue, scope: ScopeFilter, filter: JobFilter): Promise<number> {
  let n = 0;
  const jobs = deadJobs(queue, scope, filter, MAX_BULK_JOBS + 1);
  while ((await jobs.next()).done !== true) n++;
  return n;
}

export interface BulkResult {
  readonly retried: number;
  /** No longer Dead by the time it was retried (someone else retried it), or gone. */
  readonly skipped: number;
}

/** Retry every Dead job matching `filter` (up to {@link MAX_BULK_JOBS}), each through `queue.retry`. */
export async function retryDead(queue: Queue, scope: ScopeFilter, filter: JobFilter): Promise<BulkResult> {
  const ids: string[] = [];
  for await (const job of deadJobs(queue, scope, filter, MAX_BULK_JOBS)) ids.push(job.jobId);
  let retried = 0;
  let skipped = 0;
  for (const jobId of ids) {
    try {
      await queue.retry(jobId, scope);
      retried++;
    } catch (error) {
      if (!isTelhaError(error, ErrorCode.FailedPrecondition) && !isTelhaError(error, ErrorCode.NotFound)) throw error;
      skipped++;
    }
  }
  return { retried, skipped };
}
