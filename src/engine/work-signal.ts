/**
 * Wakes lease waiters when work may have appeared, so a long-polling lease
 * returns as soon as a matching job is eligible instead of on a polling tick.
 *
 * Each ready job wakes one waiting caller whose scope and kind filter match it
 * (oldest waiter first): a burst of N jobs wakes N waiters, not all of them.
 * A job that is Pending but still gated wakes every matching waiter once, so
 * each can shorten its sleep to the new gate.
 */
import { kindMatches } from '../core/transitions.ts';
import type { JobRecord, ScopeFilter } from '../core/types.ts';
import { inScope } from '../storage/shared.ts';

/** Why a wait ended: a matching job was announced, the time ran out, or the caller gave up. */
export type WakeReason = 'woken' | 'timeout' | 'aborted';

interface Waiter {
  readonly scope: ScopeFilter;
  readonly kinds: readonly string[] | null;
  wake(reason: WakeReason): void;
}

export class WorkSignal {
  private readonly waiters = new Set<Waiter>();
  /**
   * Bumped by every notify. A caller reads it before looking for work and
   * passes it to `wait`, which returns at once if work was announced in
   * between: no wake-up is lost to the gap between a lease attempt and the wait.
   */
  private announced = 0;

  get version(): number {
    return this.announced;
  }

  get waiting(): number {
    return this.waiters.size;
  }

  /** Tell waiters about jobs that just became Pending. `ready` says whether their gate is already open. */
  notify(jobs: readonly JobRecord[], isReady: (job: JobRecord) => boolean): void {
    if (jobs.length === 0) return;
    this.announced++;
    if (this.waiters.size === 0) return;
    for (const job of jobs) {
      if (this.waiters.size === 0) return;
      const matching = [...this.waiters].filter((w) => inScope(job, w.scope) && kindMatches(job.kind, w.kinds));
      const toWake = isReady(job) ? matching.slice(0, 1) : matching;
      for (const waiter of toWake) {
        this.waiters.delete(waiter);
        waiter.wake('woken');
      }
    }
  }

  /**
   * Resolve when a matching job may be ready (`woken`, also at once if work was
   * announced since `seenVersion`), at `timeoutMs` at the latest (`timeout`), or
   * when `signal` aborts (`aborted`). Never rejects.
   */
  wait(
    scope: ScopeFilter,
    kinds: readonly string[] | null,
    seenVersion: number,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<WakeReason> {
    return new Promise<WakeReason>((resolve) => {
      if (signal?.aborted) return resolve('aborted');
      if (seenVersion !== this.announced) return resolve('woken');
      if (timeoutMs <= 0) return resolve('timeout');
      const done = (reason: WakeReason): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.waiters.delete(waiter);
        resolve(reason);
      };
      const onAbort = (): void => done('aborted');
      const waiter: Waiter = { scope, kinds, wake: done };
      const timer = setTimeout(() => done('timeout'), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  /** Wake everyone (shutdown). */
  wakeAll(): void {
    for (const waiter of [...this.waiters]) waiter.wake('aborted');
    this.waiters.clear();
  }
}
