/**
 * Retention for the RocksDB store: delete finished jobs older than a cut-off, read through the
 * `finished` index a page at a time from where the last pass of that state stopped.
 */
import { idempotencyIndexKey, idIndexKey, decodeJobKey, finishedIndexBound, scopeOfTenant } from '../../codec/keys.ts';
import type { JobState } from '../../core/types.ts';
import type { PruneParams } from '../types.ts';
import type { RocksContext } from './context.ts';
import type { Counters } from './counters.ts';
import type { WriteOp } from './database.ts';

/** Prune one page of `params.state`; `cursor` keeps each state's last index key between calls. */
export async function pruneFinished(
  ctx: RocksContext,
  counters: Counters,
  cursor: Map<JobState, Buffer>,
  params: PruneParams,
): Promise<number> {
  const { db, cf } = ctx;
  const start = cursor.get(params.state);
  const range = {
    ...(start ? { gt: start } : { gte: Buffer.from([params.state]) }),
    lt: finishedIndexBound(params.state, params.finishedBefore),
    limit: params.limit,
  };
  const candidates: { indexKey: Buffer; jobKey: Buffer; jobId: string }[] = [];
  for await (const [indexKey, jobKey] of db.scan(cf.finished, range)) {
    candidates.push({ indexKey, jobKey, jobId: decodeJobKey(jobKey).jobId });
  }
  if (candidates.length === 0) return 0;
  const release = await ctx.locks.acquire(candidates.map((c) => c.jobId));
  try {
    const values = await db.getMany(
      cf.jobs,
      candidates.map((c) => c.jobKey),
    );
    const ops: WriteOp[] = [];
    let pruned = 0;
    for (const [i, candidate] of candidates.entries()) {
      const value = values[i];
      ops.push({ column: cf.finished, key: candidate.indexKey, value: null });
      // A Dead job retried since the scan has moved away from this key; its index entry is already gone.
      if (value === undefined) continue;
      const record = ctx.decodeOrSkip(candidate.jobKey, value);
      ops.push({ column: cf.jobs, key: candidate.jobKey, value: null });
      ops.push({ column: cf.ids, key: idIndexKey(candidate.jobId), value: null });
      if (record !== null) {
        if (record.idempotencyKey !== null) {
          ops.push({
            column: cf.idempotency,
            key: idempotencyIndexKey(scopeOfTenant(record.tenant), record.idempotencyKey),
            value: null,
          });
        }
        counters.bump(record, -1);
      }
      pruned++;
    }
    await ctx.committer.stage(ops);
    const last = candidates[candidates.length - 1];
    if (last) cursor.set(params.state, last.indexKey);
    return pruned;
  } finally {
    release();
  }
}
