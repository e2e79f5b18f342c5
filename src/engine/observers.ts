/**
 * In-process observers of the queue's committed transitions, for metrics and
 * the dashboard's live charts: they learn what happened without scanning the
 * store. With no observer registered a call site costs one size check.
 */
import { LeaseConflictError, type LeaseConflictReason } from '../core/errors.ts';
import type { TransitionName } from '../core/transitions.ts';
import type { JobRecord, JobState, Micros } from '../core/types.ts';

/** Something the queue did, told after it was committed. */
export type QueueObservation =
  | {
      readonly type: 'transition';
      readonly transition: TransitionName;
      /** The record as written. */
      readonly record: JobRecord;
      /** Its state before; `null` for a new job. */
      readonly previous: JobState | null;
      readonly at: Micros;
    }
  /** A fenced submission refused because the caller no longer holds the lease. Nothing was written. */
  | { readonly type: 'refused'; readonly reason: LeaseConflictReason; readonly at: Micros };

/** A listener given to `queue.observe`: called synchronously after each commit, so it must be cheap. */
export type QueueObserver = (observation: QueueObservation) => void;

export class Observers {
  private readonly listeners = new Set<QueueObserver>();

  /** Register `listener`; returns its unsubscribe. */
  add(listener: QueueObserver): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Tell every listener that `records` took `transition` from `previous`. */
  transition(transition: TransitionName, records: readonly JobRecord[], previous: JobState | null, at: Micros): void {
    if (this.listeners.size === 0) return;
    for (const record of records) this.tell({ type: 'transition', transition, record, previous, at });
  }

  /** If `error` is a lease conflict, tell the listeners of the refusal. */
  refused(error: unknown, at: Micros): void {
    if (this.listeners.size === 0 || !(error instanceof LeaseConflictError)) return;
    this.tell({ type: 'refused', reason: error.reason, at });
  }

  private tell(observation: QueueObservation): void {
    // A listener is bookkeeping: its failure must never fail the transition that already committed.
    for (const listener of this.listeners) {
      try {
        listener(observation);
      } catch {
        /* ignored */
      }
    }
  }
}
