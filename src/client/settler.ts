/**
 * Batches a worker's results: completions and failures that finish while a
 * settle call is in flight wait for it and then go together in one
 * CompleteBatch / FailBatch round trip (Nagle-style: no timer, no added delay
 * when the line is idle). Each job still gets its own answer.
 */
import { MAX_SETTLE_BATCH } from '../core/limits.ts';
import type { CompleteItem, FailItem, SettleItem } from '../worker/source.ts';
import type { TelhaClient } from './client.ts';

/** A result waiting for the server's answer. */
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

/** Give each result the server's answer for it, in order: `null` accepted, else the error. */
export function answerEach(entries: readonly PendingResult[], errors: readonly (Error | null)[]): void {
  entries.forEach((entry, i) => {
    const error = errors[i];
    if (error === undefined) entry.reject(new Error('server answered fewer items than were sent'));
    else if (error === null) entry.resolve();
    else entry.reject(error);
  });
}

export class Settler {
  private queued: PendingResult[] = [];
  private flushing = false;

  constructor(private readonly client: TelhaClient) {}

  /** Resolves once the server accepted this result; rejects with the error it gave this item. */
  settle(item: SettleItem): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ item, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        // Let results finished in this same turn join the first call.
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    while (this.queued.length > 0) {
      const { completes, fails } = splitByType(this.queued.splice(0, MAX_SETTLE_BATCH));
      await Promise.all([
        this.send(completes, () => this.client.completeBatch(completes.map((e) => e.item))),
        this.send(fails, () => this.client.failBatch(fails.map((e) => e.item))),
      ]);
    }
    this.flushing = false;
  }

  private async send(entries: readonly PendingResult[], call: () => Promise<(Error | null)[]>): Promise<void> {
    if (entries.length === 0) return;
    try {
      answerEach(entries, await call());
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      for (const entry of entries) entry.reject(failure);
    }
  }
}
