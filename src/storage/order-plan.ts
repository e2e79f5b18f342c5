/**
 * The ordered-key steps of a write (`core/ordered-keys.ts`), planned the same way by every
 * backend: where a new job joins its key's line (the head, or waiting), and whose turn comes
 * when a job leaves its line. A backend keeps each line (scope, key) → its job ids oldest first,
 * and writes what these return in the same atomic write as the transition that called for them.
 */
import {
  compareBlockedKeys,
  isWaiting,
  lineBlocked,
  orderSlot,
  staysInLine,
  type BlockedKey,
} from '../core/ordered-keys.ts';
import { inScope } from '../core/scope.ts';
import { promote, waitForTurn } from '../core/transitions.ts';
import type { JobRecord, Micros, ScopeFilter } from '../core/types.ts';
import type { StoredLine } from './types.ts';

/** The jobs an insert adds to lines, placed one by one in call order. */
export class LineJoins {
  /** Per slot (`orderSlot`), the jobs this write adds, oldest first. */
  readonly joined = new Map<string, JobRecord[]>();

  /** `occupied(tenant, key)`: whether the stored line of the key holds any job. */
  constructor(private readonly occupied: (tenant: string | null, key: string) => boolean) {}

  /** `record` as it is written: waiting for its turn when its line already holds a job. */
  place(record: JobRecord): JobRecord {
    if (record.orderKey === null) return record;
    const slot = orderSlot(record.tenant, record.orderKey);
    const added = this.joined.get(slot);
    const waits = added !== undefined || this.occupied(record.tenant, record.orderKey);
    const placed = waits ? waitForTurn(record) : record;
    if (added === undefined) this.joined.set(slot, [placed]);
    else added.push(placed);
    return placed;
  }

  /** Replace a placed job by its later self (a later draft of the same write changed it). */
  replace(record: JobRecord): void {
    if (record.orderKey === null) return;
    const added = this.joined.get(orderSlot(record.tenant, record.orderKey));
    const i = added?.findIndex((r) => r.jobId === record.jobId) ?? -1;
    if (added !== undefined && i >= 0) added[i] = record;
  }
}

/**
 * Whether the move to `after` takes a job that is in its line (`inLine`) out of it: it finished
 * (Completed, Cancelled, or Dead with policy `release`).
 */
export function leavesLine(inLine: boolean, after: JobRecord): boolean {
  return inLine && after.orderKey !== null && !staysInLine(after);
}

/**
 * The turn after a line changed: `first` is the line's first job now (`null`: the line is empty,
 * or its first record is gone); when it waits, it is promoted, and the caller writes it in the
 * same write. `after` is the job that left (`null` for an operator's release of a gone head).
 */
export function nextTurn(first: JobRecord | null, after: string | null, now: Micros): JobRecord | null {
  return first !== null && isWaiting(first) ? promote(first, after, now) : null;
}

/**
 * `JobStore.blockedKeys` over lines a store keeps by id (memory, RocksDB): those in `filter`
 * whose first job (`load`: `null` when gone) is blocked, in listing order, at most `limit`.
 */
export function blockedOf(
  lines: Iterable<StoredLine>,
  load: (jobId: string) => JobRecord | null,
  filter: ScopeFilter,
  limit: number,
): BlockedKey[] {
  const blocked: BlockedKey[] = [];
  for (const line of lines) {
    if (!inScope(line, filter)) continue;
    const head = load(line.ids[0] ?? '');
    if (!lineBlocked(head)) continue;
    // Every job of a line but its first waits.
    const waiting = line.ids.length - 1;
    blocked.push({
      tenant: line.tenant,
      orderKey: line.key,
      head: head !== null && isWaiting(head) ? null : head,
      waiting,
    });
  }
  return blocked.sort(compareBlockedKeys).slice(0, limit);
}
