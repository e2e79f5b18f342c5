/**
 * A queue's tenant limits (`core/tenant-limits.ts`): stored through the seam, seeded from
 * `[jobs.tenants]` at open, and the set of limited tenants this queue last read or wrote, which
 * says whose waiters a job leaving Leased frees room for.
 */
import type { Clock } from '../core/clock.ts';
import type { TelhaConfig } from '../core/config.ts';
import { notFound } from '../core/errors.ts';
import { checkLimitRate } from '../core/kind-limits.ts';
import type { Logger } from '../core/logger.ts';
import {
  checkTenantLimit,
  configTenantLimits,
  DEFAULT_TENANT_WEIGHT,
  MAX_TENANT_LIMITS,
  type TenantLimit,
  type TenantLimitStatus,
} from '../core/tenant-limits.ts';
import { JobState, type JobRecord } from '../core/types.ts';
import { checkTenant } from '../core/validate.ts';
import type { JobStore } from '../storage/types.ts';
import type { SetTenantLimitOptions } from './queue-options.ts';
import type { WorkSignal } from './work-signal.ts';

export class TenantQuotas {
  /** The limited tenants as this queue last read or wrote them (another server's change: at the next listing). */
  private limited: ReadonlySet<string> = new Set();
  /** Settles when the `[jobs.tenants]` limits are in the store: claims and listings wait for it. */
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

  /** `Queue.setTenantLimit`: checked, stored, the table read again, and parked waiters told. */
  async set(options: SetTenantLimitOptions): Promise<TenantLimit> {
    await this.seeded;
    const limit = checkTenantLimit({
      tenant: options.tenant,
      concurrency: options.concurrency ?? null,
      rate: checkLimitRate(options.rate),
      weight: options.weight ?? DEFAULT_TENANT_WEIGHT,
      setAt: this.deps.clock.now(),
      by: options.by ?? 'local',
    });
    const stored = await this.deps.store.setTenantLimit(limit, MAX_TENANT_LIMITS);
    await this.list();
    // A raised limit may let parked waiters take work now.
    this.deps.work.notifyAll();
    return stored;
  }

  /** `Queue.clearTenantLimit`: `not_found` when the tenant has no limit. */
  async clear(tenant: string): Promise<void> {
    await this.seeded;
    const name = checkTenant(tenant);
    if (!(await this.deps.store.clearTenantLimit(name))) throw notFound(`tenant limit of ${name}`);
    await this.list();
    this.deps.work.notifyAll();
  }

  /** `Queue.tenantLimits`: read from the store, which refreshes the set of limited tenants. */
  async list(): Promise<TenantLimitStatus[]> {
    await this.seeded;
    const limits = await this.deps.store.listTenantLimits(this.deps.clock.now());
    this.limited = new Set(limits.map((l) => l.tenant));
    return limits;
  }

  /** Wake the waiters of each limited tenant a job among `records` (which were Leased) left. */
  freed(records: readonly JobRecord[]): void {
    if (this.limited.size === 0) return;
    const tenants = new Set<string>();
    for (const record of records) {
      if (record.state === JobState.Leased || record.tenant === null || !this.limited.has(record.tenant)) continue;
      tenants.add(record.tenant);
    }
    for (const tenant of tenants) this.deps.work.notifyTenant(tenant);
  }

  /** Store the `[jobs.tenants]` tables, `by: 'config'`, each replacing its tenant's limit. */
  private async seed(): Promise<void> {
    const { store, config, clock, logger } = this.deps;
    try {
      for (const limit of configTenantLimits(config.jobs.tenants, clock.now())) {
        await store.setTenantLimit(limit, MAX_TENANT_LIMITS);
      }
      this.limited = new Set((await store.listTenantLimits(clock.now())).map((l) => l.tenant));
    } catch (error) {
      logger.error({ err: String(error) }, 'could not store the tenant limits of [jobs.tenants]');
    }
  }
}
