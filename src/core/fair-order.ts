/**
 * The fleet's fair order. A claim across every scope (the worker fleet's poll) used to take ready
 * jobs in key order, scope first: one tenant with a million Pending jobs starved every tenant
 * whose scope bytes sort after it. The fair order is:
 *
 *  1. system jobs first, in key order (the server's own maintenance, as the spec orders it);
 *  2. then one job per tenant in turn, tenants in scope-byte order, starting with the first tenant
 *     after the one served last (the store's cursor) and wrapping around; within a tenant, key
 *     order (priority, then FIFO).
 *
 * A claim of `limit` jobs goes round the tenants as many times as it needs. The cursor belongs to
 * the store instance: a reopened store starts again before the first tenant.
 *
 * This is the reference, written plainly over a sorted list; the RocksDB live index and the
 * PostgreSQL claim compute the same order without looking at more than one job per tenant.
 */

/** What the fair order needs of a ready job. */
export interface FairCandidate {
  /** The job's scope as a string that orders as its bytes do (the system scope sorts first). */
  readonly scope: string;
  readonly system: boolean;
}

export interface FairPick<T> {
  readonly chosen: T[];
  /** The scope of the last tenant served, or the cursor given when no tenant was served. */
  readonly cursor: string | null;
}

/**
 * Choose up to `limit` jobs from `ready` (every ready, matching job, in key order) in the fair
 * order, starting after `cursor`. `admit` is asked, in that order, whether each job the order
 * reaches may be taken (`LaneBudget.take` of `core/kind-limits.ts`); a job it refuses is passed
 * over, and a tenant with nothing admitted left is not served (its turn goes to the next).
 */
export function fairPick<T extends FairCandidate>(
  ready: readonly T[],
  limit: number,
  cursor: string | null,
  admit: (job: T) => boolean = () => true,
): FairPick<T> {
  const chosen: T[] = [];
  const tenants = new Map<string, T[]>();
  let left = 0;
  for (const job of ready) {
    if (job.system) {
      if (chosen.length < limit && admit(job)) chosen.push(job);
      continue;
    }
    let queue = tenants.get(job.scope);
    if (queue === undefined) tenants.set(job.scope, (queue = []));
    queue.push(job);
    left++;
  }
  const scopes = [...tenants.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (scopes.length === 0) return { chosen, cursor };
  let at = cursor === null ? 0 : scopes.findIndex((scope) => scope > cursor);
  if (at === -1) at = 0;
  let served = cursor;
  while (chosen.length < limit && left > 0) {
    const scope = scopes[at] as string;
    const queue = tenants.get(scope) ?? [];
    let next = queue.shift();
    while (next !== undefined) {
      left--;
      if (admit(next)) break;
      next = queue.shift();
    }
    if (next !== undefined) {
      chosen.push(next);
      served = scope;
    }
    at = (at + 1) % scopes.length;
  }
  return { chosen, cursor: served };
}
