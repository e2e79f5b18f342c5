/**
 * The change feed behind Watch: the store's transitions log, and a signal
 * for its readers that it may have grown.
 *
 * Every backend appends a log entry in the same atomic write as each
 * transition (`core/transitions-log.ts`), so the feed holds every transition
 * committed through any server sharing the store, and an application's
 * transactional enqueues, for as long as retention keeps them
 * (`watch.retain_secs`, `watch.retain_events`). A reader holds only a
 * position, so a watcher that stops reading costs the server nothing but its
 * place; it resumes after a reconnect, a restart (RocksDB), or on another
 * server (PostgreSQL).
 *
 * Readers are told to look again after this queue's own transitions (at once,
 * in the same event-loop turn as the commit) and when a shared store hears of
 * another process's (NOTIFY); they fall back to the store's poll interval.
 */
import { ErrorCode, TelhaError } from '../core/errors.ts';
import type { LogFilter, LogPage } from '../core/transitions-log.ts';
import type { JobStore } from '../storage/types.ts';
import type { QueueEventEmitter } from './observers.ts';

export class ChangeFeed {
  private readonly listeners = new Set<() => void>();
  private unobserve: (() => void) | null = null;

  constructor(
    private readonly store: JobStore,
    private readonly events: QueueEventEmitter,
    /** `watch.enabled`: off, the store writes no log and every read is refused. */
    readonly enabled: boolean,
  ) {
    store.watchLog?.(() => this.tell());
  }

  /** For a reader on a shared store: the longest it waits before looking again, as lease waiters do. */
  get pollIntervalMs(): number | null {
    return this.store.pollIntervalMs ?? null;
  }

  /** The position after the newest entry: reading after it yields what commits from now on. */
  head(): Promise<string> {
    this.assertEnabled();
    return this.store.logHead();
  }

  /** Up to `limit` entries after `position` that match `filter` (see `JobStore.readLog`). */
  read(position: string, limit: number, filter: LogFilter): Promise<LogPage> {
    this.assertEnabled();
    return this.store.readLog(position, limit, filter);
  }

  /**
   * The log after `from`, page by page (at most `limit` entries that match `filter` each), as it
   * commits, until `signal` aborts. The first page comes at once, empty or not (its read checks
   * `from`); after it, a page comes when the position moved (entries, or entries skipped by the
   * filter). It is pulled: a reader that stops pulling holds its position and nothing else.
   */
  async *follow(from: string, limit: number, filter: LogFilter, signal: AbortSignal): AsyncGenerator<LogPage> {
    let appended = 0;
    let wake: (() => void) | null = null;
    const unsubscribe = this.subscribe(() => {
      appended++;
      wake?.();
    });
    const onAbort = (): void => wake?.();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      let first = true;
      while (!signal.aborted) {
        const mark = appended;
        const page = await this.read(from, limit, filter);
        const moved = page.position !== from;
        if (first || moved) yield page;
        first = false;
        from = page.position;
        if (moved || appended !== mark || signal.aborted) continue;
        await new Promise<void>((resolve) => {
          const poll = this.pollIntervalMs;
          const timer = poll === null ? null : setTimeout(() => done(), poll);
          const done = (): void => {
            if (timer !== null) clearTimeout(timer);
            wake = null;
            resolve();
          };
          wake = done;
        });
      }
    } finally {
      unsubscribe();
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** Call `listener` whenever the log may have grown, until the returned function is called. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    if (this.unobserve === null) {
      const onTransition = (): void => this.tell();
      this.events.on('transition', onTransition);
      this.unobserve = () => this.events.off('transition', onTransition);
      this.store.logFollowed?.(true);
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size > 0) return;
      this.stopObserving();
    };
  }

  /** Drop every listener. */
  close(): void {
    this.listeners.clear();
    this.stopObserving();
  }

  private stopObserving(): void {
    if (this.unobserve === null) return;
    this.unobserve();
    this.unobserve = null;
    this.store.logFollowed?.(false);
  }

  private tell(): void {
    for (const listener of this.listeners) listener();
  }

  private assertEnabled(): void {
    if (!this.enabled) {
      throw new TelhaError(
        ErrorCode.FailedPrecondition,
        'watch.enabled is false on this server: no transitions log is kept to watch',
      );
    }
  }
}
