/**
 * The ordered-key lines of a RocksDB store (`core/ordered-keys.ts`): the `order` column,
 * `[job id 16]` → JSON `{c: place, t: tenant, k: key}` for each job in a line, and the lines
 * in memory, read at open, ordered by place, which the write path consults and changes as it stages
 * each write (as `SupersedeKeys` does: a write that then fails leaves memory ahead of the column
 * until the next write of the line). Only jobs in a line have an entry, so the column stays as
 * small as the ordered work waiting. A pruned head keeps its entry: the line reads as blocked
 * (its head gone) until an operator releases the key.
 */
import { orderSlot, type BlockedKey } from '../../core/ordered-keys.ts';
import type { JobRecord } from '../../core/types.ts';
import { idIndexKey, jobIdFromBytes } from '../../codec/keys.ts';
import type { ColumnHandle, RocksDatabase, WriteOp } from './database.ts';

interface Line {
  readonly tenant: string | null;
  readonly key: string;
  /**
   * Job ids in line order, with their places: a job's `created_at` (the order this store
   * enqueues in), or one past the place before it when that is later. Only an imported line
   * meets the second case: its source (PostgreSQL's lines follow commit order across servers)
   * may have ordered it otherwise than by `created_at`, and the order at open must be its order.
   */
  readonly jobs: { readonly jobId: string; readonly place: number }[];
}

export class OrderLines {
  private readonly lines = new Map<string, Line>();
  /** Job id → its line's slot, for the jobs in a line. */
  private readonly slotOf = new Map<string, string>();

  constructor(
    private readonly db: RocksDatabase,
    private readonly column: ColumnHandle,
  ) {}

  /** Read the column into memory, at open. */
  async load(): Promise<void> {
    for await (const [key, value] of this.db.scan(this.column, {})) {
      const { c, t, k } = JSON.parse(value.toString('utf8')) as { c: number; t: string | null; k: string };
      this.add(t, k, jobIdFromBytes(key), c);
    }
    for (const line of this.lines.values()) {
      line.jobs.sort((a, b) => a.place - b.place || (a.jobId < b.jobId ? -1 : 1));
    }
  }

  /** Whether the line of (`tenant`, `key`) holds any job. */
  occupied(tenant: string | null, key: string): boolean {
    return (this.lines.get(slotOf(tenant, key))?.jobs.length ?? 0) > 0;
  }

  /** Stage `record`, just created with a key (or imported), as the last of its line. */
  join(ops: WriteOp[], record: JobRecord): void {
    if (record.orderKey === null) return;
    const last = this.lines.get(slotOf(record.tenant, record.orderKey))?.jobs.at(-1)?.place ?? -Infinity;
    const place = Math.max(record.createdAt, last + 1);
    this.add(record.tenant, record.orderKey, record.jobId, place);
    const value = JSON.stringify({ c: place, t: record.tenant, k: record.orderKey });
    ops.push({ column: this.column, key: idIndexKey(record.jobId), value: Buffer.from(value, 'utf8') });
  }

  /** Stage `jobId`'s leaving its line, if it is in one; returns the line's slot (`null`: not in a line). */
  leave(ops: WriteOp[], jobId: string): string | null {
    const slot = this.slotOf.get(jobId);
    if (slot === undefined) return null;
    this.slotOf.delete(jobId);
    const line = this.lines.get(slot);
    if (line !== undefined) {
      const i = line.jobs.findIndex((j) => j.jobId === jobId);
      if (i >= 0) line.jobs.splice(i, 1);
      if (line.jobs.length === 0) this.lines.delete(slot);
    }
    ops.push({ column: this.column, key: idIndexKey(jobId), value: null });
    return slot;
  }

  /** Whether `jobId` is in a line. */
  has(jobId: string): boolean {
    return this.slotOf.has(jobId);
  }

  /** The first job id of the line at `slot`, if any. */
  first(slot: string): string | undefined {
    return this.lines.get(slot)?.jobs[0]?.jobId;
  }

  /** The slot of (`tenant`, `key`). */
  slot(tenant: string | null, key: string): string {
    return slotOf(tenant, key);
  }

  /** Every line with its ids, for `blockedKeys` (the caller reads the records). */
  *entries(): IterableIterator<{
    readonly tenant: string | null;
    readonly key: string;
    readonly ids: readonly string[];
  }> {
    for (const line of this.lines.values()) {
      yield { tenant: line.tenant, key: line.key, ids: line.jobs.map((j) => j.jobId) };
    }
  }

  private add(tenant: string | null, key: string, jobId: string, place: number): void {
    const slot = slotOf(tenant, key);
    let line = this.lines.get(slot);
    if (line === undefined) {
      line = { tenant, key, jobs: [] };
      this.lines.set(slot, line);
    }
    line.jobs.push({ jobId, place });
    this.slotOf.set(jobId, slot);
  }
}

/** A line's map key: the one slot per (scope, key), as `core/ordered-keys.ts` has it. */
function slotOf(tenant: string | null, key: string): string {
  return orderSlot(tenant, key);
}

export type { BlockedKey };
