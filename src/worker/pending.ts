/**
 * Results waiting for the store's answer, whatever carries them there: the
 * SDK's batch calls and Work stream, or `LocalWorker`'s calls on a `Queue`.
 * Each job gets its own answer from a batch.
 */
import type { ItemResult } from '../core/types.ts';
import type { CompleteItem, FailItem, SettleItem } from './source.ts';

/** A result waiting for the store's answer. */
export interface PendingResult<Item extends SettleItem = SettleItem> {
  readonly item: Item;
  resolve(): void;
  reject(error: Error): void;
}

/** Completions and failures apart: they travel in separate lists. */
export function splitByType(entries: readonly PendingResult[]): {
  completes: PendingResult<CompleteItem>[];
  fails: PendingResult<FailItem>[];
} {
  const completes: PendingResult<CompleteItem>[] = [];
  const fails: PendingResult<FailItem>[] = [];
  for (const entry of entries) {
    if (entry.item.type === 'complete') completes.push(entry as PendingResult<CompleteItem>);
    else fails.push(entry as PendingResult<FailItem>);
  }
  return { completes, fails };
}

/** Give each result the store's answer for it, in order. */
export function answerEach(entries: readonly PendingResult[], results: readonly ItemResult<unknown>[]): void {
  entries.forEach((entry, i) => {
    const result = results[i];
    if (result === undefined) entry.reject(new Error('server answered fewer items than were sent'));
    else if (result.ok) entry.resolve();
    else entry.reject(result.error);
  });
}

/** Send `entries` with one batch call and answer each from it; a call that fails fails them all. */
export async function sendBatch(
  entries: readonly PendingResult[],
  call: () => Promise<readonly ItemResult<unknown>[]>,
): Promise<void> {
  if (entries.length === 0) return;
  try {
    answerEach(entries, await call());
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    for (const entry of entries) entry.reject(failure);
  }
}
