/**
 * A queue's kind limits: stored through the seam, seeded from `[jobs.kinds]` at open, and the
 * table of lanes this queue last read or wrote, which says whose waiters a job leaving Leased
 * frees room for.
 */
import type { Clock } from '../core/clock.ts';
import type { TelhaConfig } from '../core/config.ts';
import { notFound } from '../core/errors.ts';
import {
  checkKindLimit,
  checkLimitPrefix,
  checkLimitRate,
  configKindLimits,
  limitLane,
  MAX_KIND_LIMITS,
  type KindLimit,
  type KindLimitStatus,
} from '../core/kind-limits.ts';
import type { Logger } from '../core/logger.ts';
import { JobState, type JobRecord } from '../core/types.ts';
import type { JobStore } from '../storage/types.ts';
import type { SetKindLimitOptions } from './queue-options.ts';
import type { WorkSignal } from './work-signal.ts';

export class KindLanes {
  /**
   * The kind limits as this queue last read or wrote them. On a shared store another server's
   * change reaches it at the next listing; until then its waiters look again after the store's
   * poll interval.
   */
  private limits: readonly KindLimit[] = [];
  /** Settles when the `[jobs.kinds]` limits are in the store: claims and listings wait for it. */
  readonly seeded: Promise<void>;

  constructor(
    private readonly deps: {
      readonly store: JobStore;
      readonly config: TelhaConfig;
      readonly clock: Clock;
      readonly logger: Logger;
      readonly work: WorkSignal;
    },
  ) {
    this.seeded = this.seed();
  }

  /** `Queue.setKindLimit`: checked, stored, the table read again, and parked waiters told. */
  async set(options: SetKindLimitOptions): Promise<KindLimit> {
    await this.seeded;
    const limit = checkKindLimit({
      kindPrefix: options.kindPrefix,
      concurrency: options.concurrency ?? null,
      rate: checkLimitRate(options.rate),
      setAt: this.deps.clock.now(),
      by: options.by ?? 'local',
    });
    const stored = await this.deps.store.setKindLimit(limit, MAX_KIND_LIMITS);
    await this.list();
    // A raised limit may let parked waiters take work now.
    this.deps.work.notifyAll();
    return stored;
  }

  /** `Queue.clearKindLimit`: `not_found` when the prefix has no limit. */
  async clear(kindPrefix: string): Promise<void> {
    await this.seeded;
    const prefix = checkLimitPrefix(kindPrefix);
    if (!(await this.deps.store.clearKindLimit(prefix))) throw notFound(`kind limit of ${prefix}`);
    await this.list();
    this.deps.work.notifyAll();
  }

  /** `Queue.kindLimits`: read from the store, which refreshes the table of lanes. */
  async list(): Promise<KindLimitStatus[]> {
    await this.seeded;
    const limits = await this.deps.store.listKindLimits(this.deps.clock.now());
    this.limits = limits;
    return limits;
  }

  /** Wake the waiters of each lane a job among `records` (which were Leased) left. */
  freed(records: readonly JobRecord[]): void {
    if (this.limits.length === 0) return;
    const lanes = new Set<string>();
    for (const record of records) {
      if (record.state === JobState.Leased) continue;
      const lane = limitLane(this.limits, record.kind);
      if (lane !== null) lanes.add(lane);
    }
    for (const lane of lanes) this.deps.work.notifyLane(lane);
  }

  /** Store the `[jobs.kinds]` tables that set a concurrency or a rate, `by: 'config'`, each replacing its prefix's limit. */
  private async seed(): Promise<void> {
    const { store, config, clock, logger } = this.deps;
    try {
      for (const limit of configKindLimits(config.jobs.kinds, clock.now())) {
        await store.setKindLimit(limit, MAX_KIND_LIMITS);
      }
      this.limits = await store.listKindLimits(clock.now());
    } catch (error) {
      logger.error({ err: String(error) }, 'could not store the kind limits of [jobs.kinds]');
    }
  }
}
