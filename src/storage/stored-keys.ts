/**
 * `JobStore.importKeys`, planned the same way by every backend: which of the jobs an import
 * wrote go back in their ordered keys' lines, and which take their supersede keys back. A
 * backend reads what it needs (the records, whether each is in a line, each key's holder),
 * calls this, and writes what it returns in one atomic write.
 */
import { holdsKeyIn, supersedeSlot } from '../core/supersede.ts';
import type { JobRecord } from '../core/types.ts';
import type { KeysImportOutcome, StoredKeys } from './types.ts';

export interface KeysImportPlan {
  /** Per line, its jobs to place at its end, in order: each held by the store and in no line yet. */
  readonly lines: readonly (readonly JobRecord[])[];
  /** Jobs that take their supersede keys: live, and their keys free. */
  readonly holders: readonly JobRecord[];
  readonly outcome: KeysImportOutcome;
}

export interface StoreView {
  /** The record of a job the store holds, `null` for one it does not. */
  readonly load: (jobId: string) => JobRecord | null;
  /** Whether the job is in a line now. */
  readonly inLine: (jobId: string) => boolean;
  /** Whether another job holds the supersede key of (`tenant`, `key`) now. */
  readonly keyHeld: (tenant: string | null, key: string) => boolean;
}

/**
 * Plan the import of `keys`. A job is placed only in the line of the key its record names, and
 * takes only the supersede key its record names: a stream's line cannot put a job where its
 * own enqueue could not have.
 */
export function planKeysImport(keys: StoredKeys, store: StoreView): KeysImportPlan {
  const placed = new Set<string>();
  const lines: JobRecord[][] = [];
  let linesWritten = 0;
  for (const line of keys.lines) {
    const joining: JobRecord[] = [];
    for (const id of line.ids) {
      const record = store.load(id);
      if (record === null || placed.has(id) || store.inLine(id)) continue;
      if (record.orderKey !== line.key || record.tenant !== line.tenant) continue;
      placed.add(id);
      joining.push(record);
    }
    if (joining.length > 0) {
      linesWritten++;
      lines.push(joining);
    }
  }
  const taken = new Set<string>();
  const holders: JobRecord[] = [];
  for (const holder of keys.holders) {
    const record = store.load(holder.jobId);
    const slot = supersedeSlot(holder.tenant, holder.key);
    if (
      record === null ||
      !holdsKeyIn(record.state) ||
      record.supersedeKey !== holder.key ||
      record.tenant !== holder.tenant ||
      taken.has(slot) ||
      store.keyHeld(holder.tenant, holder.key)
    ) {
      continue;
    }
    taken.add(slot);
    holders.push(record);
  }
  return {
    lines,
    holders,
    outcome: {
      lines: { written: linesWritten, skipped: keys.lines.length - linesWritten },
      holders: { written: holders.length, skipped: keys.holders.length - holders.length },
    },
  };
}
