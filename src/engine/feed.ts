/**
 * The change feed behind Watch: every transition this process commits,
 * numbered in the order the queue tells its observers of them, with the last
 * `capacity` kept in a ring buffer for watchers to read from and resume in.
 *
 * The numbers are this feed's own: a fresh random epoch per feed names the
 * sequence, so a resume token from another process (another server, or this
 * server before a restart) is recognised as unknown instead of being read
 * against numbers that mean other transitions. Nothing is persisted: after a
 * restart a watcher re-reads the state it cares about (Show, List) and
 * watches anew. Memory stays bounded by `capacity` whatever watchers do; a
 * watcher that falls further behind than the buffer loses its place, and is
 * told so.
 */
import { randomBytes } from 'node:crypto';
import { ErrorCode, TelhaError } from '../core/errors.ts';
import type { JobEvent, JobRecord, Micros } from '../core/types.ts';
import type { QueueEventEmitter, TransitionEvent } from './observers.ts';

/** One transition of one job, as a watcher receives it. */
export interface FeedEvent {
  /** This feed's number for it: consecutive, from 1. */
  readonly seq: number;
  /** The job event it wrote: `enqueued`, `leased`, `progress`, `completed`, `failed`, `dead`, ... */
  readonly transition: string;
  readonly detail: string | null;
  readonly at: Micros;
  /**
   * The job as written, without payload and continuation, with its last {@link FEED_JOB_EVENTS}
   * events, and its result only up to {@link FEED_RESULT_BYTES}.
   */
  readonly job: JobRecord;
}

/**
 * Events kept on each buffered job: enough for the transition's own (a failure that dead-letters
 * writes `failed` then `dead`), without holding up to 1,000 events per buffered transition.
 */
export const FEED_JOB_EVENTS = 3;

/**
 * The largest result a buffered event carries. A result may be up to `jobs.max_result_bytes`
 * (16 MiB at most), and the ring holds `watch.buffer_events` transitions: with every result kept,
 * a full buffer of large results would hold gigabytes. A bigger result is left out of the event
 * (the job's `result` reads `null` there) and read with Show, as `client.result` does.
 */
export const FEED_RESULT_BYTES = 1_024;

/** Job events that only extend a lease: frequent, and no change a watcher waits for. */
const UNWATCHED: ReadonlySet<string> = new Set(['extended', 'checkpoint']);

const EMPTY = new Uint8Array(0);

/** A parsed resume token: the feed it came from and the last sequence number its holder saw. */
export interface FeedPosition {
  readonly epoch: string;
  readonly seq: number;
}

export class ChangeFeed {
  /** Names this feed's numbering; random per feed, so tokens from another process never match. */
  readonly epoch = randomBytes(6).toString('hex');
  private readonly ring: (FeedEvent | undefined)[];
  private last = 0;
  private readonly listeners = new Set<() => void>();
  private readonly unobserve: () => void;

  constructor(
    events: QueueEventEmitter,
    readonly capacity: number,
  ) {
    this.ring = new Array<FeedEvent | undefined>(capacity);
    const onTransition = (event: TransitionEvent): void => this.append(event);
    events.on('transition', onTransition);
    this.unobserve = () => events.off('transition', onTransition);
  }

  /** The sequence number of the newest event; 0 before the first. */
  get lastSeq(): number {
    return this.last;
  }

  /** The oldest sequence number still held. */
  get firstSeq(): number {
    return Math.max(1, this.last - this.capacity + 1);
  }

  /** Events held: never more than `capacity`. */
  get size(): number {
    return Math.min(this.last, this.capacity);
  }

  /** `epoch:seq`: where a watcher that has seen up to `seq` resumes. */
  token(seq: number): string {
    return `${this.epoch}:${seq}`;
  }

  /**
   * The position a resume token names, refused with `failed_precondition` when it is not this
   * feed's or its next event has left the buffer: the watcher would otherwise miss events.
   */
  resume(token: string): number {
    const match = /^([0-9a-f]+):(\d{1,16})$/.exec(token);
    const seq = match === null ? NaN : Number(match[2]);
    if (match?.[1] !== this.epoch || !(seq <= this.last) || seq + 1 < this.firstSeq) {
      throw new TelhaError(
        ErrorCode.FailedPrecondition,
        'resume token too old or from another server: read the jobs with show or list, then watch again without one',
        { field: 'resume_token' },
      );
    }
    return seq;
  }

  /** Up to `limit` events after `seq`, oldest first; `null` if the next one has left the buffer. */
  after(seq: number, limit: number): FeedEvent[] | null {
    if (seq + 1 < this.firstSeq) return null;
    const out: FeedEvent[] = [];
    for (let next = seq + 1; next <= this.last && out.length < limit; next++) {
      out.push(this.ring[next % this.capacity] as FeedEvent);
    }
    return out;
  }

  /** Call `listener` after each append, until the returned function is called. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stop observing the queue. */
  close(): void {
    this.unobserve();
    this.listeners.clear();
  }

  private append({ records, at }: TransitionEvent): void {
    let appended = false;
    for (const record of records) {
      const last: JobEvent | undefined = record.events[record.events.length - 1];
      if (last === undefined || UNWATCHED.has(last.transition)) continue;
      const seq = ++this.last;
      this.ring[seq % this.capacity] = {
        seq,
        transition: last.transition,
        detail: last.detail,
        at,
        job: {
          ...record,
          payload: EMPTY,
          continuation: null,
          result: (record.result?.byteLength ?? 0) > FEED_RESULT_BYTES ? null : record.result,
          events: record.events.slice(-FEED_JOB_EVENTS),
        },
      };
      appended = true;
    }
    if (!appended) return;
    for (const listener of this.listeners) listener();
  }
}
