/**
 * Pauses and kind limits of a RocksDB store: rows in the `default` column, also held in memory
 * and applied by the live index, which claims consult. Each kind has one lock for all its
 * writers, so two at once cannot both take the last free place.
 */
import { CorruptRecordError } from '../../core/errors.ts';
import { admitKindLimit, compareKindLimits, type KindLimit, type KindLimitStatus } from '../../core/kind-limits.ts';
import {
  admitPause,
  comparePauses,
  pauseInFilter,
  pauseKey,
  type Pause,
  type PauseBounds,
  type PauseScope,
} from '../../core/pauses.ts';
import type { Micros, ScopeFilter } from '../../core/types.ts';
import { prefixUpperBound } from '../../codec/keys.ts';
import { decodeKindLimit, encodeKindLimit, KIND_LIMIT_PREFIX, kindLimitRowKey } from '../../codec/kind-limits.ts';
import { decodePause, encodePause, PAUSE_PREFIX, pauseRowKey, pauseScopeBytes } from '../../codec/pauses.ts';
import { latin1, type RocksContext } from './context.ts';

/** The store's pauses and kind limits. */
export class Controls {
  /** Every pause by `pauseKey` (at most `MAX_PAUSES`), loaded at open; the live index holds them too. */
  private readonly pauses = new Map<string, Pause>();
  /** Every kind limit by prefix (at most `MAX_KIND_LIMITS`), loaded at open; the live index applies them. */
  private readonly limits = new Map<string, KindLimit>();

  constructor(private readonly ctx: RocksContext) {}

  /** Read every pause and kind limit into memory and the live index: at open. */
  async load(): Promise<void> {
    await this.loadPauses();
    await this.loadKindLimits();
  }

  private async loadPauses(): Promise<void> {
    const lt = prefixUpperBound(PAUSE_PREFIX) ?? undefined;
    for await (const [key, value] of this.ctx.db.scan(this.ctx.cf.meta, { gte: PAUSE_PREFIX, ...(lt ? { lt } : {}) })) {
      try {
        const pause = decodePause(value, key.toString('hex'));
        this.pauses.set(pauseKey(pause.scope, pause.kindPrefix), pause);
      } catch (error) {
        if (!(error instanceof CorruptRecordError)) throw error;
        this.ctx.corruptRows++;
        this.ctx.logger.warn({ key: error.key, err: error.message }, 'skipping corrupt pause row');
      }
    }
    this.indexPauses();
  }

  private async loadKindLimits(): Promise<void> {
    const lt = prefixUpperBound(KIND_LIMIT_PREFIX) ?? undefined;
    for await (const [key, value] of this.ctx.db.scan(this.ctx.cf.meta, {
      gte: KIND_LIMIT_PREFIX,
      ...(lt ? { lt } : {}),
    })) {
      try {
        const limit = decodeKindLimit(value, key.toString('hex'));
        this.limits.set(limit.kindPrefix, limit);
      } catch (error) {
        if (!(error instanceof CorruptRecordError)) throw error;
        this.ctx.corruptRows++;
        this.ctx.logger.warn({ key: error.key, err: error.message }, 'skipping corrupt kind limit row');
      }
    }
    this.ctx.index.setLimits([...this.limits.values()]);
  }

  // ---- kind limits ----

  async setKindLimit(limit: KindLimit, maxTotal: number): Promise<KindLimit> {
    this.ctx.assertOpen();
    // One lock for every limit: two at once cannot both take the last free place.
    const release = await this.ctx.locks.acquire(['kind-limits']);
    try {
      admitKindLimit([...this.limits.values()], limit, maxTotal);
      await this.ctx.committer.stage([
        { column: this.ctx.cf.meta, key: kindLimitRowKey(limit.kindPrefix), value: encodeKindLimit(limit) },
      ]);
      this.limits.set(limit.kindPrefix, limit);
      this.ctx.index.setLimits([...this.limits.values()]);
      return limit;
    } finally {
      release();
    }
  }

  async clearKindLimit(kindPrefix: string): Promise<boolean> {
    this.ctx.assertOpen();
    const release = await this.ctx.locks.acquire(['kind-limits']);
    try {
      if (!this.limits.has(kindPrefix)) return false;
      await this.ctx.committer.stage([{ column: this.ctx.cf.meta, key: kindLimitRowKey(kindPrefix), value: null }]);
      this.limits.delete(kindPrefix);
      this.ctx.index.setLimits([...this.limits.values()]);
      return true;
    } finally {
      release();
    }
  }

  listKindLimits(now: Micros): Promise<KindLimitStatus[]> {
    this.ctx.assertOpen();
    return Promise.resolve(this.ctx.index.limitStatuses([...this.limits.values()].sort(compareKindLimits), now));
  }

  private indexPauses(): void {
    this.ctx.index.setPauses(
      [...this.pauses.values()].map((pause) => {
        const scope = pauseScopeBytes(pause.scope);
        return { scope: scope === null ? null : latin1(scope), kindPrefix: pause.kindPrefix };
      }),
    );
  }

  // ---- pauses ----

  async pauseKinds(pause: Pause, bounds: PauseBounds): Promise<Pause> {
    this.ctx.assertOpen();
    // One lock for every pause: two at once cannot both take the last free place.
    const release = await this.ctx.locks.acquire(['pauses']);
    try {
      const existing = admitPause([...this.pauses.values()], pause, bounds);
      if (existing !== null) return existing;
      await this.ctx.committer.stage([
        { column: this.ctx.cf.meta, key: pauseRowKey(pause.scope, pause.kindPrefix), value: encodePause(pause) },
      ]);
      this.pauses.set(pauseKey(pause.scope, pause.kindPrefix), pause);
      this.indexPauses();
      return pause;
    } finally {
      release();
    }
  }

  async resumeKinds(scope: PauseScope, kindPrefix: string): Promise<boolean> {
    this.ctx.assertOpen();
    const release = await this.ctx.locks.acquire(['pauses']);
    try {
      const key = pauseKey(scope, kindPrefix);
      if (!this.pauses.has(key)) return false;
      await this.ctx.committer.stage([{ column: this.ctx.cf.meta, key: pauseRowKey(scope, kindPrefix), value: null }]);
      this.pauses.delete(key);
      this.indexPauses();
      return true;
    } finally {
      release();
    }
  }

  listPauses(filter: ScopeFilter): Promise<Pause[]> {
    this.ctx.assertOpen();
    return Promise.resolve([...this.pauses.values()].filter((p) => pauseInFilter(p, filter)).sort(comparePauses));
  }
}
