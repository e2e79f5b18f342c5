/**
 * Latest wins: what an enqueue with a `supersedeKey` does to the job that holds the key in its
 * scope, and when a job lets go of its key. Pure decisions; each store applies them inside the
 * one atomic write of the enqueue (or of the holder's own transition), keeping an index of
 * (scope, supersede key) → the holding job's id.
 *
 * The holder of a key is the newest job enqueued with it, for as long as that job is live
 * (Pending or Leased). It lets go when it finishes (Completed, Dead, Cancelled, superseded
 * included) or when a newer job takes the key while it runs (mode `pending`). A job retried
 * from Dead or Cancelled runs as a plain job: it does not take its key back.
 */
import { invalidArgument } from './errors.ts';
import { idempotencySlot } from './scope.ts';
import { JobState, type JobRecord, type SupersedeMode } from './types.ts';

export type { SupersedeMode };

export const SUPERSEDE_MODES: readonly SupersedeMode[] = ['pending', 'leased'];

/** What an enqueue does to the key's holder. */
export type SupersedeAction =
  /** No live holder: the key is free, the new job takes it. */
  | 'take'
  /** The holder ends Cancelled (reason `superseded`), the new job takes the key. */
  | 'cancel'
  /** The holder is Leased and the mode spares it: it runs on, the new job takes the key. */
  | 'pass';

/** What an enqueue with mode `mode` does to `holder`, the job the index names (`null`: none, or pruned). */
export function supersedeAction(holder: JobRecord | null, mode: SupersedeMode): SupersedeAction {
  if (holder === null) return 'take';
  if (holder.state === JobState.Pending) return 'cancel';
  if (holder.state === JobState.Leased) return mode === 'leased' ? 'cancel' : 'pass';
  return 'take';
}

/** Whether `state` is one a key's holder keeps its key in. */
export function holdsKeyIn(state: JobState): boolean {
  return state === JobState.Pending || state === JobState.Leased;
}

/**
 * Whether the move from `before` to `after` lets go of the job's key: it finished. The store
 * removes the index entry in the same write, if the entry still names this job.
 */
export function releasesSupersedeKey(before: JobRecord, after: JobRecord): boolean {
  return after.supersedeKey !== null && holdsKeyIn(before.state) && !holdsKeyIn(after.state);
}

/**
 * A supersede key is unique within its scope, like an idempotency key: the same key in two
 * tenants names two holders. This is the slot it occupies, as a map key.
 */
export const supersedeSlot: (tenant: string | null, key: string) => string = idempotencySlot;

/** A request's mode: `pending` when left out. */
export function checkSupersedeMode(value: unknown, field = 'supersede'): SupersedeMode {
  if (value === undefined || value === null) return 'pending';
  if (typeof value !== 'string' || !(SUPERSEDE_MODES as readonly string[]).includes(value)) {
    throw invalidArgument(field, `must be one of ${SUPERSEDE_MODES.join(', ')}`);
  }
  return value as SupersedeMode;
}
