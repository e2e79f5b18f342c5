/**
 * The queue's writes of jobs by id: a worker's fenced change of a leased job (one, or many in one
 * pass of the store) and an operator's change of one job. Each is the store's atomic
 * read-check-write around a transition of `core/`, confined to a scope, and then told to the
 * queue's observers (`WriteContext.transitioned`).
 */
import type { Clock } from '../core/clock.ts';
import { assertInScope } from '../core/scope.ts';
import type * as transitions from '../core/transitions.ts';
import {
  JobState,
  type ItemResult,
  type JobRecord,
  type LeaseFence,
  type Micros,
  type ScopeFilter,
} from '../core/types.ts';
import { checkJobId, parseFence } from '../core/validate.ts';
import type { JobStore, UpdateItem } from '../storage/types.ts';
import { eachOnItsOwn } from './each.ts';
import type { QueueEventEmitter } from './observers.ts';

/** What the queue's writes share: its store and clock, and where each committed transition is told. */
export interface WriteContext {
  readonly store: JobStore;
  readonly clock: Clock;
  readonly events: QueueEventEmitter;
  /** Throws `unavailable` once the queue is closed. */
  assertOpen(): void;
  /** Tell listeners of a committed transition (and free kind-limit lanes of jobs that left Leased). */
  transitioned(
    transition: transitions.TransitionName,
    records: readonly JobRecord[],
    previous: JobState | null,
    now: Micros,
  ): void;
}

/** One fenced change of a leased job in `scope`: the store's atomic read-check-write, then the observers (a refusal is told too). */
export async function fencedWrite(
  ctx: WriteContext,
  transition: transitions.TransitionName,
  jobId: string,
  fence: LeaseFence,
  scope: ScopeFilter,
  apply: (record: JobRecord, fence: LeaseFence, now: Micros) => JobRecord,
): Promise<JobRecord> {
  ctx.assertOpen();
  const id = checkJobId(jobId);
  const checked = parseFence(fence);
  const now = ctx.clock.now();
  const outcome = await ctx.store
    .update(
      id,
      (current) => {
        assertInScope(current, scope);
        return { record: apply(current, checked, now) };
      },
      now,
    )
    .catch((error: unknown) => {
      ctx.events.refused(error, now);
      throw error;
    });
  ctx.transitioned(transition, [outcome.record], JobState.Leased, now);
  return outcome.record;
}

/** Each item's fenced change, validated on its own (`check` turns it into what `apply` needs), then all applied in one `updateMany`. */
export async function fencedEach<T extends { readonly jobId: string; readonly fence: LeaseFence }, R = T>(
  ctx: WriteContext,
  transition: transitions.TransitionName,
  items: readonly T[],
  scope: ScopeFilter,
  apply: (record: JobRecord, fence: LeaseFence, request: R, now: Micros) => JobRecord,
  check: (item: T) => R = (item) => item as unknown as R,
): Promise<ItemResult<JobRecord>[]> {
  const now = ctx.clock.now();
  const results = await eachOnItsOwn(
    items,
    (item): UpdateItem => {
      const jobId = checkJobId(item.jobId);
      const fence = parseFence(item.fence);
      const request = check(item);
      return {
        jobId,
        change: (current) => {
          assertInScope(current, scope);
          return { record: apply(current, fence, request, now) };
        },
      };
    },
    (updates) => ctx.store.updateMany(updates, now),
  );
  ctx.transitioned(
    transition,
    results.flatMap((result) => (result.ok ? [result.value] : [])),
    JobState.Leased,
    now,
  );
  for (const result of results) if (!result.ok) ctx.events.refused(result.error, now);
  return results;
}

/** One operator's transition of one job in `scope`: the store's atomic read-check-write, then the observers. */
export async function operate(
  ctx: WriteContext,
  name: transitions.TransitionName,
  jobId: string,
  scope: ScopeFilter,
  change: (current: JobRecord, now: Micros) => JobRecord,
): Promise<JobRecord> {
  ctx.assertOpen();
  const id = checkJobId(jobId);
  const now = ctx.clock.now();
  let previous: JobState = JobState.Pending;
  const outcome = await ctx.store.update(
    id,
    (current) => {
      assertInScope(current, scope);
      previous = current.state;
      return { record: change(current, now) };
    },
    now,
  );
  ctx.transitioned(name, [outcome.record], previous, now);
  return outcome.record;
}
