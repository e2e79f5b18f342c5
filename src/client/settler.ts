/**
 * Batches a worker's results: completions, failures and releases that finish
 * while a settle call is in flight wait for it and then go together in one
 * CompleteEach / FailEach / ReleaseEach round trip (Nagle-style: no timer, no added delay
 * when the line is idle). Each job still gets its own answer.
 */
import { MAX_SETTLE_BATCH } from '../core/bounds.ts';
import { sendBatch, splitByType, type PendingResult } from '../worker/pending.ts';
import type { SettleItem } from '../worker/source.ts';
import type { TelhaClient } from './client.ts';

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
      const { completes, fails, releases } = splitByType(this.queued.splice(0, MAX_SETTLE_BATCH));
      await Promise.all([
        sendBatch(completes, () => this.client.completeEach(completes.map((e) => e.item))),
        sendBatch(fails, () => this.client.failEach(fails.map((e) => e.item))),
        sendBatch(releases, () => this.client.releaseEach(releases.map((e) => e.item))),
      ]);
    }
    this.flushing = false;
  }
}
