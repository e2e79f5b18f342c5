/**
 * The supersede step of an enqueue, planned the same way by every backend: for each new job
 * with a `supersedeKey`, in call order, what happens to the key's holder (`core/supersede.ts`).
 * A backend looks up the stored holders, calls this, and writes what it returns together with
 * the new jobs, in the enqueue's one atomic write.
 */
import { supersedeAction, supersedeSlot } from '../core/supersede.ts';
import { continueDebounceRun, supersede } from '../core/transitions.ts';
import { JobState, type JobRecord, type Micros } from '../core/types.ts';
import type { InsertOutcome, JobDraft } from './types.ts';

export interface SupersedePlan {
  /** Stored holders this call cancels, as cancelled: the store writes them in the same write. */
  readonly cancelled: readonly JobRecord[];
  /** Each new job that replaced a stored holder, by its id: the holder as it is now, and the state it left. */
  readonly replaced: ReadonlyMap<string, { readonly record: JobRecord; readonly from: JobState }>;
  /** Stored Leased holders that run on but lose their key to a new job (mode `pending`). */
  readonly passed: readonly JobRecord[];
  /** Each slot (`supersedeSlot`) this call wrote, and its holder now: always a job created here. */
  readonly holders: ReadonlyMap<string, JobRecord>;
}

/**
 * Plan the supersede step. `records[i]` is the job `drafts[i]` creates, or `null` where the draft
 * repeats an idempotency key (a repeat supersedes nothing: the first enqueue already did); a job
 * created here that a later draft of the same call supersedes is replaced in `records` by its
 * cancelled self, written once, already Cancelled. `storedHolder` answers the job the index
 * entry of a draft's (scope, key) names (`null` for none, or one since pruned).
 */
export function planSupersede(
  drafts: readonly JobDraft[],
  records: (JobRecord | null)[],
  storedHolder: (draft: JobDraft & { readonly supersedeKey: string }) => JobRecord | null,
  now: Micros,
): SupersedePlan {
  const cancelled = new Map<string, JobRecord>();
  const replaced = new Map<string, { readonly record: JobRecord; readonly from: JobState }>();
  const passed: JobRecord[] = [];
  /** Each slot's holder as this call goes: a stored job (`index` null) or one created here. */
  const current = new Map<string, { record: JobRecord; index: number | null }>();
  for (const [i, draft] of drafts.entries()) {
    let record = records[i];
    const key = draft.supersedeKey ?? null;
    if (record === null || record === undefined || key === null) continue;
    const slot = supersedeSlot(draft.tenant, key);
    let holder = current.get(slot);
    if (holder === undefined) {
      const stored = storedHolder({ ...draft, supersedeKey: key });
      if (stored !== null) holder = { record: stored, index: null };
    }
    const action = supersedeAction(holder?.record ?? null, draft.supersede ?? 'pending');
    if (holder !== undefined && action === 'cancel') {
      // A debounce run goes on while its job waits: the new job keeps the run's bound (debounceMaxMs).
      const until = holder.record.debounceUntil;
      if (record.debounceUntil !== null && until !== null && holder.record.state === JobState.Pending) {
        record = continueDebounceRun(record, until);
        records[i] = record;
      }
      const done = supersede(holder.record, record.jobId, now);
      if (holder.index === null) {
        cancelled.set(done.jobId, done);
        replaced.set(record.jobId, { record: done, from: holder.record.state });
      } else {
        records[holder.index] = done;
      }
    } else if (holder !== undefined && action === 'pass' && holder.index === null) {
      passed.push(holder.record);
    }
    current.set(slot, { record, index: i });
  }
  const holders = new Map<string, JobRecord>();
  for (const [slot, { record }] of current) holders.set(slot, record);
  return { cancelled: [...cancelled.values()], replaced, passed, holders };
}

/**
 * `outcomes` with the jobs planned in `records` (some now superseded) and the holders each replaced.
 * A repeat of an idempotency key answers its job as this call's write leaves it, as every other
 * outcome does: one the same call then superseded is answered Cancelled, not as it was when repeated.
 */
export function supersededOutcomes(
  outcomes: readonly InsertOutcome[],
  records: readonly (JobRecord | null)[],
  plan: SupersedePlan,
): InsertOutcome[] {
  const written = new Map<string, JobRecord>();
  for (const record of plan.cancelled) written.set(record.jobId, record);
  for (const record of records) if (record !== null) written.set(record.jobId, record);
  return outcomes.map((outcome, i) => {
    const record = records[i];
    if (record === null || record === undefined) {
      const after = written.get(outcome.record.jobId);
      return after === undefined ? outcome : { ...outcome, record: after };
    }
    const superseded = plan.replaced.get(record.jobId);
    return superseded === undefined ? { record, created: true } : { record, created: true, superseded };
  });
}
