/**
 * The leases this store wrote last, by job id: the record of each job it leased (or extended),
 * and the bytes it stored for it, so a worker's result for the job (the next write, nearly
 * always) need not read the row first. It is a guess, never the truth: every write that starts
 * from it is a compare-and-set on the stored bytes, and an answer worked out from it that is not
 * a write (a refusal) is checked against the row. A row another server or an operator changed
 * since fails the compare and is read afresh.
 */
import { JobState, type JobRecord } from '../../core/types.ts';

/** A record as this store wrote it, and the bytes it stored for it. */
export interface WrittenRecord {
  readonly record: JobRecord;
  readonly value: Buffer;
}

/**
 * Leased jobs this store wrote, holding at most `maxBytes` of stored values (each record counts
 * twice: its bytes and the decoded copy, which shares none of them), the ones written longest
 * ago dropped first. A job written in any other state is dropped: its next change is rarer and
 * reads its row.
 */
export class WrittenRecords {
  private readonly entries = new Map<string, WrittenRecord>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(jobId: string): WrittenRecord | undefined {
    return this.entries.get(jobId);
  }

  /** `record` was stored as `value`. */
  remember(record: JobRecord, value: Buffer): void {
    // Dropped first, so a job written again moves to the young end of the map's order.
    this.forget(record.jobId);
    const size = 2 * value.byteLength;
    if (record.state !== JobState.Leased || size > this.maxBytes / 16) return;
    this.entries.set(record.jobId, { record, value });
    this.bytes += size;
    for (const [jobId] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.forget(jobId);
    }
  }

  /** What this store remembers of `jobId` is not what its row holds, or may not be. */
  forget(jobId: string): void {
    const entry = this.entries.get(jobId);
    if (entry === undefined) return;
    this.entries.delete(jobId);
    this.bytes -= 2 * entry.value.byteLength;
  }

  get size(): number {
    return this.entries.size;
  }
}
