/**
 * Tenant limits of a RocksDB store (`core/tenant-limits.ts`): rows in the `default` column, also
 * held in memory and applied by the live index, which claims consult. One lock for every writer,
 * so two at once cannot both take the last free place.
 */
import { CorruptRecordError } from '../../core/errors.ts';
import {
  admitTenantLimit,
  compareTenantLimits,
  type TenantLimit,
  type TenantLimitStatus,
} from '../../core/tenant-limits.ts';
import type { Micros } from '../../core/types.ts';
import { prefixUpperBound, scopeOfTenant } from '../../codec/keys.ts';
import {
  decodeTenantLimit,
  encodeTenantLimit,
  TENANT_LIMIT_PREFIX,
  tenantLimitRowKey,
} from '../../codec/tenant-limits.ts';
import { latin1, type RocksContext } from './context.ts';

export class TenantLimits {
  /** Every tenant limit by tenant (at most `MAX_TENANT_LIMITS`), loaded at open. */
  private readonly limits = new Map<string, TenantLimit>();

  constructor(private readonly ctx: RocksContext) {}

  /** Read every tenant limit into memory and the live index: at open. */
  async load(): Promise<void> {
    const lt = prefixUpperBound(TENANT_LIMIT_PREFIX) ?? undefined;
    for await (const [key, value] of this.ctx.db.scan(this.ctx.cf.meta, {
      gte: TENANT_LIMIT_PREFIX,
      ...(lt ? { lt } : {}),
    })) {
      try {
        const limit = decodeTenantLimit(value, key.toString('hex'));
        this.limits.set(limit.tenant, limit);
      } catch (error) {
        if (!(error instanceof CorruptRecordError)) throw error;
        this.ctx.corruptRows++;
        this.ctx.logger.warn({ key: error.key, err: error.message }, 'skipping corrupt tenant limit row');
      }
    }
    this.index();
  }

  async set(limit: TenantLimit, maxTotal: number): Promise<TenantLimit> {
    this.ctx.assertOpen();
    const release = await this.ctx.locks.acquire(['tenant-limits']);
    try {
      admitTenantLimit([...this.limits.values()], limit, maxTotal);
      await this.ctx.committer.stage([
        { column: this.ctx.cf.meta, key: tenantLimitRowKey(limit.tenant), value: encodeTenantLimit(limit) },
      ]);
      this.limits.set(limit.tenant, limit);
      this.index();
      return limit;
    } finally {
      release();
    }
  }

  async clear(tenant: string): Promise<boolean> {
    this.ctx.assertOpen();
    const release = await this.ctx.locks.acquire(['tenant-limits']);
    try {
      if (!this.limits.has(tenant)) return false;
      await this.ctx.committer.stage([{ column: this.ctx.cf.meta, key: tenantLimitRowKey(tenant), value: null }]);
      this.limits.delete(tenant);
      this.index();
      return true;
    } finally {
      release();
    }
  }

  list(now: Micros): Promise<TenantLimitStatus[]> {
    this.ctx.assertOpen();
    return Promise.resolve(this.ctx.index.tenantStatuses([...this.limits.values()].sort(compareTenantLimits), now));
  }

  private index(): void {
    this.ctx.index.setTenantLimits([...this.limits.values()], (tenant) => latin1(scopeOfTenant(tenant)));
  }
}
