/**
 * A queue's kind limits (`core/kind-limits.ts`), a `LimitTable`: seeded from `[jobs.kinds]`; a job
 * leaving Leased frees room in its lane, the longest limited prefix of its kind.
 */
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
import { LimitTable, type LimitTableDeps } from './limit-table.ts';
import type { SetKindLimitOptions } from './queue-options.ts';

export class KindLanes extends LimitTable<KindLimit, KindLimitStatus, SetKindLimitOptions, readonly KindLimit[]> {
  constructor(deps: LimitTableDeps) {
    super(deps, {
      what: 'kind limit',
      section: '[jobs.kinds]',
      maxTotal: MAX_KIND_LIMITS,
      check: (options, now) =>
        checkKindLimit({
          kindPrefix: options.kindPrefix,
          concurrency: options.concurrency ?? null,
          rate: checkLimitRate(options.rate),
          setAt: now,
          by: options.by ?? 'local',
        }),
      checkName: checkLimitPrefix,
      set: (store, limit, maxTotal) => store.setKindLimit(limit, maxTotal),
      clear: (store, kindPrefix) => store.clearKindLimit(kindPrefix),
      list: (store, now) => store.listKindLimits(now),
      fromConfig: (config, now) => configKindLimits(config.jobs.kinds, now),
      index: (limits) => limits,
      laneOf: (limits, record) => limitLane(limits, record.kind),
      notify: (work, lane) => work.notifyLane(lane),
    });
  }
}
