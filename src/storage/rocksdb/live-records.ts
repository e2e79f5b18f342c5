/**
 * The job records the RocksDB store holds in memory beside its {@link LiveIndex}: every Leased
 * job's (every fenced submit reads one, so they stay, bounded by the number of leases) and, up to
 * a byte budget, the Pending ones this process wrote, so a claim of recent work neither reads nor
 * decodes its rows (measured in bench/RESULTS.md, "The measurements behind the code's choices").
 * When the budget is full, newer records are not cached (claims take the oldest first, and those
 * are here); a miss reads the row.
 */
import { JobState, type JobRecord, type Micros } from '../../core/types.ts';
import { latin1 } from './context.ts';
import type { LiveIndex } from './live-index.ts';

/** A job's row: its current key and its record. */
export interface Loaded {
  readonly key: Buffer;
  readonly record: JobRecord;
}

/** A record's size beside its payload, roughly: fields, events, key, map entry. */
const PENDING_RECORD_OVERHEAD = 600;

export class LiveRecords {
  private readonly leasedRecords = new Map<string, Loaded>();
  private readonly pendingRecords = new Map<string, Loaded & { readonly bytes: number }>();
  private pendingBytes = 0;

  constructor(
    private readonly index: LiveIndex,
    /** The Pending cache's budget; one record may take at most 1/64 of it. */
    private readonly pendingCacheBytes: number,
  ) {}

  /** Index a live job (Pending or Leased), keeping a Leased job's record. */
  indexLive(key: Buffer, record: JobRecord, now: Micros): void {
    if (record.state === JobState.Pending) {
      this.index.addPending(
        { jobId: record.jobId, key: latin1(key), kind: record.kind, notBefore: record.notBefore },
        now,
      );
    } else if (record.state === JobState.Leased) {
      this.index.addLeased({
        jobId: record.jobId,
        key: latin1(key),
        kind: record.kind,
        deadline: record.leaseDeadline ?? 0,
      });
      this.leasedRecords.set(record.jobId, { key, record });
    }
  }

  /**
   * Index a job this process has just written (or put back), keeping a Pending
   * job's record for the claim that will take it. The rebuild at open indexes
   * without caching: a backlog read from disk is not recent work.
   */
  indexWritten(key: Buffer, record: JobRecord, now: Micros): void {
    this.indexLive(key, record, now);
    if (record.state === JobState.Pending) this.rememberPending(key, record);
  }

  /** Take a job out of the index and the caches as it leaves the state it was in. */
  unindex(record: JobRecord): void {
    if (record.state === JobState.Pending) {
      this.index.removePending(record.jobId);
      this.forgetPending(record.jobId);
    }
    if (record.state === JobState.Leased) {
      this.index.removeLeased(record.jobId);
      this.leasedRecords.delete(record.jobId);
    }
  }

  /** A Leased job's row, when it is leased. */
  leased(jobId: string): Loaded | undefined {
    return this.leasedRecords.get(jobId);
  }

  /** Every Leased job's row, in no order. */
  allLeased(): IterableIterator<Loaded> {
    return this.leasedRecords.values();
  }

  /** A Pending job's cached row, if it is cached, no longer cached from now (a claim takes it). */
  takePending(jobId: string): Loaded | undefined {
    const cached = this.pendingRecords.get(jobId);
    this.forgetPending(jobId);
    return cached;
  }

  /** Cached Pending records and their estimated bytes, for tests and metrics. */
  get pendingCache(): { records: number; bytes: number } {
    return { records: this.pendingRecords.size, bytes: this.pendingBytes };
  }

  private rememberPending(key: Buffer, record: JobRecord): void {
    this.forgetPending(record.jobId);
    const bytes = record.payload.byteLength + (record.continuation?.byteLength ?? 0) + PENDING_RECORD_OVERHEAD;
    // Full: keep what is cached. Claims take the oldest work first, and that is what is here.
    if (this.pendingBytes + bytes > this.pendingCacheBytes || bytes > this.pendingCacheBytes / 64) return;
    this.pendingRecords.set(record.jobId, { key, record, bytes });
    this.pendingBytes += bytes;
  }

  private forgetPending(jobId: string): void {
    const entry = this.pendingRecords.get(jobId);
    if (entry === undefined) return;
    this.pendingRecords.delete(jobId);
    this.pendingBytes -= entry.bytes;
  }
}
