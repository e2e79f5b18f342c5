/**
 * The per-(scope, state, kind) job counters of the RocksDB store: held in memory, loaded at open,
 * moved by each staged unit, and written back by the next batch as the summary of what changed
 * (`flushOps`), so `counts` never scans the jobs.
 */
import { countKey, decodeCountKey, encodeU64, readU64, scopeBytes, scopeOfTenant } from '../../codec/keys.ts';
import type { JobState, JobRecord, ScopeFilter } from '../../core/types.ts';
import type { CountRow } from '../types.ts';
import { latin1 } from './context.ts';
import type { ColumnHandle, RocksDatabase, WriteOp } from './database.ts';

/** A change to a (scope, state, kind) counter: `record`'s slot moves by `delta`. */
export type CountChange = readonly [record: JobRecord, delta: number];

export class Counters {
  private readonly counters = new Map<string, number>();
  private readonly dirty = new Set<string>();

  constructor(
    private readonly db: RocksDatabase,
    private readonly column: ColumnHandle,
  ) {}

  /** Read every stored counter; at open, before anything is staged. */
  async load(): Promise<void> {
    for await (const [key, value] of this.db.scan(this.column, {})) {
      this.counters.set(latin1(key), readU64(value, 0));
    }
  }

  bump(record: JobRecord, delta: number): void {
    const slot = latin1(countKey(scopeOfTenant(record.tenant), record.state, record.kind));
    this.counters.set(slot, (this.counters.get(slot) ?? 0) + delta);
    this.dirty.add(slot);
  }

  /** The ops that write every counter changed since the last call (a zero deletes its row). */
  flushOps(): WriteOp[] {
    const ops: WriteOp[] = [];
    for (const slot of this.dirty) {
      const count = this.counters.get(slot) ?? 0;
      const key = Buffer.from(slot, 'latin1');
      if (count === 0) {
        this.counters.delete(slot);
        ops.push({ column: this.column, key, value: null });
      } else {
        ops.push({ column: this.column, key, value: encodeU64(count) });
      }
    }
    this.dirty.clear();
    return ops;
  }

  /** Jobs per state and kind in `scope`, by state, then kind. */
  rows(scope: ScopeFilter): CountRow[] {
    const prefix = scope.type === 'any' ? null : latin1(scopeBytes(scope));
    const totals = new Map<string, CountRow>();
    for (const [slot, count] of this.counters) {
      if (count === 0 || (prefix !== null && !slot.startsWith(prefix))) continue;
      const { state, kind } = decodeCountKey(Buffer.from(slot, 'latin1'));
      const id = `${state}\u0000${kind}`;
      totals.set(id, { state: state as JobState, kind, count: (totals.get(id)?.count ?? 0) + count });
    }
    return [...totals.values()].sort((a, b) => a.state - b.state || (a.kind < b.kind ? -1 : 1));
  }
}
