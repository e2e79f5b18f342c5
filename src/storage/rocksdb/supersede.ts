/**
 * The supersede index of a RocksDB store (`core/supersede.ts`): the `supersede` column,
 * `[scope][key]` → the id of the job holding the key, and a copy of it in memory, read at open,
 * which the write path consults and changes as it stages each write (a write that then fails
 * leaves the copy naming a job that is not there, or a key free that the column still names:
 * either reads as a free key, and the next holder's put replaces the entry). Only live jobs hold
 * keys, so the column stays as small as the live work that uses them.
 */
import { releasesSupersedeKey } from '../../core/supersede.ts';
import type { JobRecord } from '../../core/types.ts';
import { idIndexKey, jobIdFromBytes, scopeOfTenant, supersedeIndexKey } from '../../codec/keys.ts';
import type { JobDraft } from '../types.ts';
import type { ColumnHandle, RocksDatabase, WriteOp } from './database.ts';

export class SupersedeKeys {
  /** `latin1` of an index key → the holder's job id. */
  private readonly holders = new Map<string, string>();

  constructor(
    private readonly db: RocksDatabase,
    private readonly column: ColumnHandle,
  ) {}

  /** Read the column into memory, at open. */
  async load(): Promise<void> {
    for await (const [key, value] of this.db.scan(this.column, {})) {
      this.holders.set(key.toString('latin1'), jobIdFromBytes(value));
    }
  }

  /** The id of the job holding the key of `draft`'s scope, if any. */
  holderOf(tenant: string | null, key: string): string | undefined {
    return this.holders.get(slotOf(tenant, key));
  }

  /**
   * The locks an enqueue of `drafts` takes besides its own: each key's, and its holder's job (the
   * enqueue may cancel it), but never `held`, a job the caller holds already. Job ids sort before
   * `sup:` names, so an enqueue waiting for a holder its completion is finishing holds no key's
   * lock meanwhile. `snapshot` is what the holders were; `unchanged` says whether they still are
   * once the locks are taken (else the caller takes them again).
   */
  locksFor(drafts: readonly JobDraft[], held?: string): { names: string[]; snapshot: Map<string, string | undefined> } {
    const names: string[] = [];
    const snapshot = new Map<string, string | undefined>();
    for (const draft of drafts) {
      if (draft.supersedeKey === undefined || draft.supersedeKey === null) continue;
      const slot = slotOf(draft.tenant, draft.supersedeKey);
      const holder = this.holders.get(slot);
      snapshot.set(slot, holder);
      names.push(`sup:${slot}`);
      if (holder !== undefined && holder !== held) names.push(holder);
    }
    return { names, snapshot };
  }

  /** The lock an enqueue takes on the key of (`tenant`, `key`), as `locksFor` names it. */
  keyLock(tenant: string | null, key: string): string {
    return `sup:${slotOf(tenant, key)}`;
  }

  /** The ids of the jobs holding keys. */
  holderIds(): IterableIterator<string> {
    return this.holders.values();
  }

  unchanged(snapshot: ReadonlyMap<string, string | undefined>): boolean {
    for (const [slot, holder] of snapshot) if (this.holders.get(slot) !== holder) return false;
    return true;
  }

  /** Stage `record` as its key's holder. */
  take(ops: WriteOp[], record: JobRecord): void {
    if (record.supersedeKey === null) return;
    const key = supersedeIndexKey(scopeOfTenant(record.tenant), record.supersedeKey);
    this.holders.set(key.toString('latin1'), record.jobId);
    ops.push({ column: this.column, key, value: idIndexKey(record.jobId) });
  }

  /** Stage the key's release when the move from `before` to `after` finished its holder. */
  release(ops: WriteOp[], before: JobRecord, after: JobRecord): void {
    if (after.supersedeKey === null || !releasesSupersedeKey(before, after)) return;
    const key = supersedeIndexKey(scopeOfTenant(after.tenant), after.supersedeKey);
    const slot = key.toString('latin1');
    if (this.holders.get(slot) !== after.jobId) return;
    this.holders.delete(slot);
    ops.push({ column: this.column, key, value: null });
  }
}

function slotOf(tenant: string | null, key: string): string {
  return supersedeIndexKey(scopeOfTenant(tenant), key).toString('latin1');
}
