/**
 * Batches a worker's results: completions and failures that finish while a
 * settle call is in flight wait for it and then go together in one
 * CompleteBatch / FailBatch round trip (Nagle-style: no timer, no added delay
 * when the line is idle). Each job still gets its own answer.
 */
import { MAX_SETTLE_BATCH } from '../core/limits.ts';
import type { TelhaClient } from './client.ts';
import type { SettleItem } from '../worker/source.ts';

interface Entry {
  readonly item: SettleItem;
  resolve(): void;
  reject(error: Error): void;
}

export class Settler {
  private queued: Entry[] = [];
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
      const batch = this.queued.splice(0, MAX_SETTLE_BATCH);
      const completes = batch.filter((e) => e.item.type === 'complete');
      const fails = batch.filter((e) => e.item.type === 'fail');
      await Promise.all([
        this.send(completes, () =>
          this.client.completeBatch(
            completes.map(({ item }) => ({
              jobId: item.jobId,
              fence: item.fence,
              successors: item.type === 'complete' ? item.successors : [],
            })),
          ),
        ),
        this.send(fails, () =>
          this.client.failBatch(
            fails.map(({ item }) => ({
              jobId: item.jobId,
              fence: item.fence,
              error: item.type === 'fail' ? item.error : '',
              permanent: item.type === 'fail' && item.permanent,
            })),
          ),
        ),
      ]);
    }
    this.flushing = false;
  }

  private async send(entries: readonly Entry[], call: () => Promise<(Error | null)[]>): Promise<void> {
    if (entries.length === 0) return;
    try {
      const outcomes = await call();
      entries.forEach((entry, i) => {
        const error = outcomes[i];
        if (error === undefined) entry.reject(new Error('server answered fewer items than were sent'));
        else if (error === null) entry.resolve();
        else entry.reject(error);
      });
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      for (const entry of entries) entry.reject(failure);
    }
  }
}
