/**
 * A queue's table of one sort of limit (kind limits, `kind-lanes.ts`; tenant limits,
 * `tenant-quotas.ts`): stored through the seam, seeded from the configuration at open, and the
 * limits this queue last read or wrote, which say whose waiters a job leaving Leased frees room
 * for. On a shared store another server's change reaches it at the next listing; until then its
 * waiters look again after the store's poll interval.
 */
import type { Clock } from '../core/clock.ts';
import type { TelhaConfig } from '../core/config.ts';
import { notFound } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { JobState, type JobRecord, type Micros } from '../core/types.ts';
import type { JobStore } from '../storage/types.ts';
import type { WorkSignal } from './work-signal.ts';

export interface LimitTableDeps {
  readonly store: JobStore;
  readonly config: TelhaConfig;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly work: WorkSignal;
}

/** What one sort of limit is: how it is checked, stored, seeded, and whose room a job frees. */
export interface LimitSort<L, S extends L, O, Index> {
  /** As messages name it: `kind limit`. */
  readonly what: string;
  /** The configuration's table of them: `[jobs.kinds]`. */
  readonly section: string;
  /** The most limits of the sort a store holds. */
  readonly maxTotal: number;
  /** `options` checked into a limit set at `now`; `invalid_argument` naming the field. */
  check(options: O, now: Micros): L;
  /** A name to clear, checked. */
  checkName(name: string): string;
  set(store: JobStore, limit: L, maxTotal: number): Promise<L>;
  clear(store: JobStore, name: string): Promise<boolean>;
  list(store: JobStore, now: Micros): Promise<S[]>;
  /** The configuration's limits, `by: 'config'`. */
  fromConfig(config: TelhaConfig, now: Micros): readonly L[];
  /** What `laneOf` looks limits up in, built once per listing. */
  index(limits: readonly S[]): Index;
  /** The name of the limit whose room `record` takes, `null` for none. */
  laneOf(index: Index, record: JobRecord): string | null;
  notify(work: WorkSignal, name: string): void;
}

export class LimitTable<L, S extends L, O, Index> {
  private limits: { readonly count: number; readonly index: Index };
  /** Settles when the configuration's limits are in the store: claims and listings wait for it. */
  readonly seeded: Promise<void>;

  constructor(
    private readonly deps: LimitTableDeps,
    private readonly sort: LimitSort<L, S, O, Index>,
  ) {
    this.limits = { count: 0, index: sort.index([]) };
    this.seeded = this.seed();
  }

  /** `Queue.set...Limit`: checked, stored, the table read again, and parked waiters told. */
  async set(options: O): Promise<L> {
    await this.seeded;
    const limit = this.sort.check(options, this.deps.clock.now());
    const stored = await this.sort.set(this.deps.store, limit, this.sort.maxTotal);
    await this.list();
    // A raised limit may let parked waiters take work now.
    this.deps.work.notifyAll();
    return stored;
  }

  /** `Queue.clear...Limit`: `not_found` when the name has no limit. */
  async clear(name: string): Promise<void> {
    await this.seeded;
    const checked = this.sort.checkName(name);
    if (!(await this.sort.clear(this.deps.store, checked))) throw notFound(`${this.sort.what} of ${checked}`);
    await this.list();
    this.deps.work.notifyAll();
  }

  /** `Queue....Limits`: read from the store, which refreshes the table. */
  async list(): Promise<S[]> {
    await this.seeded;
    return this.read();
  }

  /** Wake the waiters of each limit a job among `records` (which were Leased) left. */
  freed(records: readonly JobRecord[]): void {
    if (this.limits.count === 0) return;
    const names = new Set<string>();
    for (const record of records) {
      if (record.state === JobState.Leased) continue;
      const name = this.sort.laneOf(this.limits.index, record);
      if (name !== null) names.add(name);
    }
    for (const name of names) this.sort.notify(this.deps.work, name);
  }

  private async read(): Promise<S[]> {
    const limits = await this.sort.list(this.deps.store, this.deps.clock.now());
    this.limits = { count: limits.length, index: this.sort.index(limits) };
    return limits;
  }

  /** Store the configuration's limits, each replacing the one of its name. */
  private async seed(): Promise<void> {
    const { store, config, clock, logger } = this.deps;
    try {
      for (const limit of this.sort.fromConfig(config, clock.now())) {
        await this.sort.set(store, limit, this.sort.maxTotal);
      }
      await this.read();
    } catch (error) {
      logger.error({ err: String(error) }, `could not store the ${this.sort.what}s of ${this.sort.section}`);
    }
  }
}
