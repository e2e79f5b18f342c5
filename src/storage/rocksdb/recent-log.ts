/**
 * The newest entries of a RocksDB store's transitions log, kept as they were written: a watcher at
 * or near the head (every live one) reads them from here instead of reading and decoding them
 * again from RocksDB, which cost the server a third of a drain's rate with one watcher reading
 * everything (bench/RESULTS.md). Older positions are read from the store, as before.
 *
 * It holds exactly what the store wrote: entries go in after their batch is written, by sequence
 * number, and a number staged but never written (its write refused) is a hole here as on disk.
 */
import type { LogRecord } from '../../core/transitions-log.ts';

export class RecentLog {
  private readonly jobs: (LogRecord | undefined)[];
  /** The sequence numbers this covers: `oldest > newest` when it covers none. */
  private oldest = 1;
  private newest = 0;
  /** Entries below this are not taken (see `add`). */
  private floor = 0;

  constructor(private readonly capacity: number) {
    this.jobs = new Array<LogRecord | undefined>(capacity);
  }

  /** Entry `seq`, written after every entry held. */
  add(seq: number, job: LogRecord): void {
    // Out of order cannot happen (numbers are taken as entries are staged, and staged units are
    // written in order); were it to, covering nothing up to the newest number seen keeps every
    // read right: those go to the store.
    if (seq < this.floor) return;
    if (this.oldest <= this.newest && seq <= this.newest) {
      const floor = this.newest + 1;
      this.clear();
      this.floor = floor;
      return;
    }
    if (this.oldest > this.newest) {
      this.oldest = seq;
    } else {
      // Numbers skipped since the newest were never written: holes.
      for (let hole = Math.max(this.newest + 1, seq - this.capacity + 1); hole < seq; hole++) {
        this.jobs[hole % this.capacity] = undefined;
      }
    }
    this.newest = seq;
    this.jobs[seq % this.capacity] = job;
    if (this.newest - this.oldest >= this.capacity) this.oldest = this.newest - this.capacity + 1;
  }

  /** Whether what was written from `seq` on is all here (entries past the newest held were not written). */
  covers(seq: number): boolean {
    return this.oldest <= this.newest && seq >= this.oldest;
  }

  /** Entry `seq` if one was written (`covers(seq)` must hold), else `undefined`. */
  at(seq: number): LogRecord | undefined {
    return seq > this.newest ? undefined : this.jobs[seq % this.capacity];
  }

  /** Cover nothing: every read goes to the store. */
  clear(): void {
    this.jobs.fill(undefined);
    this.oldest = 1;
    this.newest = 0;
  }
}
