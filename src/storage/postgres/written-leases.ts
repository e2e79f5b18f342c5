/**
 * The leases this store wrote last, by job id: the bytes it stored for each job it leased (or
 * extended), so a worker's result for the job (the next write, nearly always) need not read the
 * row first. It is a guess, never the truth: every write that starts from it is a
 * compare-and-set on the stored bytes, and an answer worked out from it that is not a write (a
 * refusal) is checked against the row. A row another server or an operator changed since fails
 * the compare and is read afresh.
 */
import { JobState, type JobRecord } from '../../core/types.ts';

/**
 * What an entry costs beyond its bytes: the map's slot, the job id's string, the `Buffer` object
 * and the allocation (~380 measured with ~90k entries of ~380-byte records on Node 20). With it
 * the budget bounds the memory however small the records are.
 */
const ENTRY_OVERHEAD_BYTES = 384;

/**
 * Leased jobs this store wrote, at most `maxBytes` of them (their stored bytes and
 * `ENTRY_OVERHEAD_BYTES` each), the ones written longest ago dropped first. A job written in any
 * other state is dropped: its next change is rarer and reads its row. Only the bytes are kept,
 * copied into a buffer of their own: a slice of a shared one (Node's pool for small buffers, a
 * row's decoded payload) would keep the whole of it alive for as long as the entry lives.
 */
export class WrittenLeases {
  private readonly entries = new Map<string, Buffer>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** The bytes this store last wrote for `jobId`, if it remembers them. */
  get(jobId: string): Buffer | undefined {
    return this.entries.get(jobId);
  }

  /** `record` was stored as `value`. */
  remember(record: JobRecord, value: Uint8Array): void {
    // Dropped first, so a job written again moves to the young end of the map's order.
    this.forget(record.jobId);
    const size = value.byteLength + ENTRY_OVERHEAD_BYTES;
    if (record.state !== JobState.Leased || size > this.maxBytes / 16) return;
    const own = Buffer.allocUnsafeSlow(value.byteLength);
    own.set(value);
    this.entries.set(record.jobId, own);
    this.bytes += size;
    for (const [jobId] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.forget(jobId);
    }
  }

  /** What this store remembers of `jobId` is not what its row holds, or may not be. */
  forget(jobId: string): void {
    const value = this.entries.get(jobId);
    if (value === undefined) return;
    this.entries.delete(jobId);
    this.bytes -= value.byteLength + ENTRY_OVERHEAD_BYTES;
  }

  get size(): number {
    return this.entries.size;
  }
}
