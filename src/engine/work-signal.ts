/**
 * Wakes lease waiters when work may have appeared, so a long-polling lease
 * returns as soon as a matching job is eligible instead of on a polling tick.
 *
 * Each ready job wakes one waiting caller whose scope and kind filter match it
 * as a lease would take it (so a `system:` job never wakes a worker that did
 * not ask for system kinds by name; oldest waiter first): a burst of N jobs wakes N waiters, not all of them.
 * A job that is Pending but still gated wakes every matching waiter once, so
 * each can shorten its sleep to the new gate.
 */
import { laneMayServe } from '../core/kind-limits.ts';
import { MAX_TIMER_MS } from '../core/bounds.ts';
import { leaseKindMatches } from '../core/transitions.ts';
import type { ScopeFilter, WorkNotice } from '../core/types.ts';
import { inScope } from '../core/scope.ts';

/** Why a wait ended: a matching job was announced, the time ran out, or the caller gave up. */
export type WakeReason = 'woken' | 'timeout' | 'aborted';

interface Waiter {
  readonly scope: ScopeFilter;
  readonly kinds: readonly string[] | null;
  wake(reason: WakeReason): void;
}

export class WorkSignal {
  private readonly waiters = new Set<Waiter>();

  /** `onPark` runs each time a caller starts waiting. */
  constructor(private readonly onPark: () => void = () => {}) {}

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

  /**
   * Tell waiters that Pending work appeared: each ready job wakes one matching
   * waiter, a gated group wakes every matching waiter (to shorten its sleep).
   */
  notify(notices: readonly WorkNotice[]): void {
    if (notices.length === 0) return;
    this.announced++;
    for (const notice of notices) {
      if (this.waiters.size === 0) return;
      let budget = notice.ready ? notice.count : Infinity;
      for (const waiter of this.waiters) {
        if (budget === 0) break;
        if (!inScope(notice, waiter.scope) || !leaseKindMatches(notice.kind, waiter.kinds)) continue;
        budget--;
        waiter.wake('woken');
      }
    }
  }

  /**
   * A limited lane (`core/kind-limits.ts`) has room again: wake every waiter whose kind filter may
   * take its jobs. Its held-back jobs may be in any scope, so each such waiter looks.
   */
  notifyLane(kindPrefix: string): void {
    this.announced++;
    for (const waiter of [...this.waiters]) if (laneMayServe(kindPrefix, waiter.kinds)) waiter.wake('woken');
  }

  /** A limited tenant (`core/tenant-limits.ts`) has room again: wake every waiter whose scope holds it. */
  notifyTenant(tenant: string): void {
    this.announced++;
    for (const waiter of [...this.waiters]) if (inScope({ tenant }, waiter.scope)) waiter.wake('woken');
  }

  /** Wake every waiter to look again: work of unknown shape may have appeared. */
  notifyAll(): void {
    this.announced++;
    for (const waiter of [...this.waiters]) waiter.wake('woken');
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
      // Node fires a timer past its limit at once; a wait that long ends early and the caller looks again.
      const timer = setTimeout(() => done('timeout'), Math.min(timeoutMs, MAX_TIMER_MS));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
      this.onPark();
    });
  }

  /** Wake everyone (shutdown). */
  wakeAll(): void {
    for (const waiter of [...this.waiters]) waiter.wake('aborted');
    this.waiters.clear();
  }
}
