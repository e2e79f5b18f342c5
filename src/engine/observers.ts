/**
 * In-process notifications of what the queue does, for metrics, the
 * dashboard's live charts and tests that wait on a signal instead of
 * polling: listeners learn of each committed write without scanning the
 * store. An event with no listener costs one count check.
 */
import { EventEmitter } from 'node:events';
import { LeaseConflictError, type LeaseConflictReason } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { TransitionName } from '../core/transitions.ts';
import type { JobRecord, JobState, Micros } from '../core/types.ts';

/** One committed write of one transition: the records as written, told after the commit. */
export interface TransitionEvent {
  readonly transition: TransitionName;
  /** The records as written (one for a single call; several for a claim, an `...Each`, a reaper pass). */
  readonly records: readonly JobRecord[];
  /** Their state before; `null` for new jobs. */
  readonly previous: JobState | null;
  readonly at: Micros;
}

/** A fenced submission refused because the caller no longer holds the lease. Nothing was written. */
export interface RefusedEvent {
  readonly reason: LeaseConflictReason;
  readonly at: Micros;
}

/** One record's share of a `transition` event, or a refusal: what a per-job consumer (metrics) counts. */
export type QueueObservation =
  | {
      readonly type: 'transition';
      readonly transition: TransitionName;
      readonly record: JobRecord;
      readonly previous: JobState | null;
      readonly at: Micros;
    }
  | ({ readonly type: 'refused' } & RefusedEvent);

/**
 * Call `listener` for each record of each `transition` event and for each
 * refusal of `events`, until the returned function is called.
 */
export function observeEach(events: QueueEventEmitter, listener: (observation: QueueObservation) => void): () => void {
  const onTransition = ({ transition, records, previous, at }: TransitionEvent): void => {
    for (const record of records) listener({ type: 'transition', transition, record, previous, at });
  };
  const onRefused = (event: RefusedEvent): void => listener({ type: 'refused', ...event });
  events.on('transition', onTransition);
  events.on('refused', onRefused);
  return () => {
    events.off('transition', onTransition);
    events.off('refused', onRefused);
  };
}

/**
 * `queue.events`: `transition` after every committed write (enqueued jobs that
 * were created, not idempotent repeats; leases; heartbeats; results; reaps;
 * retries; releases; cancels), `refused` for stale submissions, `parked` when a lease
 * call starts to wait. Only this process's writes: not those of other servers
 * sharing a PostgreSQL store.
 */
export interface QueueEvents {
  transition: [event: TransitionEvent];
  refused: [event: RefusedEvent];
  parked: [];
}

export class QueueEventEmitter extends EventEmitter<QueueEvents> {
  constructor(private readonly logger: Logger) {
    super();
  }

  /** Tell listeners that `records` took `transition` from `previous`. */
  transition(transition: TransitionName, records: readonly JobRecord[], previous: JobState | null, at: Micros): void {
    if (records.length === 0 || this.listenerCount('transition') === 0) return;
    this.tell('transition', () => this.emit('transition', { transition, records, previous, at }));
  }

  /** If `error` is a lease conflict, tell listeners of the refusal. */
  refused(error: unknown, at: Micros): void {
    if (!(error instanceof LeaseConflictError) || this.listenerCount('refused') === 0) return;
    this.tell('refused', () => this.emit('refused', { reason: error.reason, at }));
  }

  parked(): void {
    if (this.listenerCount('parked') > 0) this.tell('parked', () => this.emit('parked'));
  }

  /** A listener is bookkeeping: its failure must never fail the write that already committed. */
  private tell(event: keyof QueueEvents, emit: () => void): void {
    try {
      emit();
    } catch (error) {
      this.logger.error({ event, err: String(error) }, 'a queue event listener threw');
    }
  }
}
