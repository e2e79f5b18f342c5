/**
 * The order of a job listing. Operators look at what just happened, so a list starts with the
 * newest job (`newest_first`, the default); `oldest_first` walks the same order backwards. Both
 * are by `created_at`, then job id, across priorities and scopes: a tenant's jobs interleave
 * with the others' by time instead of following in scope-hash order, and every store serves
 * the order from an index (RocksDB by iterating its key ranges backwards, PostgreSQL by a
 * `(state, created_at, job_id)` index), never by sorting a page.
 */
import type { JobRecord, Micros } from './types.ts';

export type ListOrder = 'newest_first' | 'oldest_first';

export const LIST_ORDERS: readonly ListOrder[] = ['newest_first', 'oldest_first'];

/** What a listing orders by, and where a page resumes: the last job's creation time and id. */
export interface ListPosition {
  readonly createdAt: Micros;
  readonly jobId: string;
}

/**
 * Negative when `a` comes before `b` in `order`. Ids compare as their bytes do: a job id is
 * lower-case hex with dashes at fixed places, so string order is byte order, as in the stores.
 */
export function compareListed(a: ListPosition, b: ListPosition, order: ListOrder): number {
  const ascending = a.createdAt - b.createdAt || (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0);
  return order === 'newest_first' ? -ascending : ascending;
}

/** Whether `record` comes after the page that ended at `after` (`null`: the first page). */
export function listedAfter(
  record: Pick<JobRecord, 'createdAt' | 'jobId'>,
  after: ListPosition | null,
  order: ListOrder,
): boolean {
  return after === null || compareListed(record, after, order) > 0;
}
