/**
 * Results waiting for the store's answer, whatever carries them there: the
 * SDK's batch calls and Work stream, or `LocalWorker`'s calls on a `Queue`.
 * Each job gets its own answer from a batch.
 */
import { ErrorCode, TelhaError } from '../core/errors.ts';
import type { ItemResult } from '../core/types.ts';
import type { CompleteItem, FailItem, ReleaseItem, SettleItem } from './source.ts';

/** A result waiting for the store's answer. */
export interface PendingResult<Item extends SettleItem = SettleItem> {
  readonly item: Item;
  resolve(): void;
  reject(error: Error): void;
}

/** Results by type: completions, failures and releases travel in separate lists. */
export interface ResultsByType {
  readonly completes: PendingResult<CompleteItem>[];
  readonly fails: PendingResult<FailItem>[];
  readonly releases: PendingResult<ReleaseItem>[];
}

/** Completions, failures and releases apart, each in the order given. */
export function splitByType(entries: readonly PendingResult[]): ResultsByType {
  const split: ResultsByType = { completes: [], fails: [], releases: [] };
  for (const entry of entries) {
    switch (entry.item.type) {
      case 'complete':
        split.completes.push(entry as PendingResult<CompleteItem>);
        break;
      case 'fail':
        split.fails.push(entry as PendingResult<FailItem>);
        break;
      case 'release':
        split.releases.push(entry as PendingResult<ReleaseItem>);
        break;
    }
  }
  return split;
}

/** Anything sent that waits for its own answer from a batch: a result, a lease extension. */
export interface Answerable<T> {
  resolve(value: T): void;
  reject(error: Error): void;
}

/** Give each entry the store's answer for it, in order. */
export function answerEach<T>(entries: readonly Answerable<T>[], results: readonly ItemResult<T>[]): void {
  entries.forEach((entry, i) => {
    const result = results[i];
    if (result === undefined)
      entry.reject(new TelhaError(ErrorCode.Internal, 'the server answered fewer items than were sent'));
    else if (result.ok) entry.resolve(result.value);
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
