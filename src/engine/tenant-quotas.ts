/**
 * A queue's tenant limits (`core/tenant-limits.ts`), a `LimitTable`: seeded from `[jobs.tenants]`;
 * a job leaving Leased frees room for its tenant, when the tenant is limited.
 */
import { checkLimitRate } from '../core/kind-limits.ts';
import {
  checkTenantLimit,
  configTenantLimits,
  DEFAULT_TENANT_WEIGHT,
  MAX_TENANT_LIMITS,
  type TenantLimit,
  type TenantLimitStatus,
} from '../core/tenant-limits.ts';
import { checkTenant } from '../core/validate.ts';
import { LimitTable, type LimitTableDeps } from './limit-table.ts';
import type { SetTenantLimitOptions } from './queue-options.ts';

export class TenantQuotas extends LimitTable<
  TenantLimit,
  TenantLimitStatus,
  SetTenantLimitOptions,
  ReadonlySet<string>
> {
  constructor(deps: LimitTableDeps) {
    super(deps, {
      what: 'tenant limit',
      section: '[jobs.tenants]',
      maxTotal: MAX_TENANT_LIMITS,
      check: (options, now) =>
        checkTenantLimit({
          tenant: options.tenant,
          concurrency: options.concurrency ?? null,
          rate: checkLimitRate(options.rate),
          weight: options.weight ?? DEFAULT_TENANT_WEIGHT,
          setAt: now,
          by: options.by ?? 'local',
        }),
      checkName: (tenant) => checkTenant(tenant),
      set: (store, limit, maxTotal) => store.setTenantLimit(limit, maxTotal),
      clear: (store, tenant) => store.clearTenantLimit(tenant),
      list: (store, now) => store.listTenantLimits(now),
      fromConfig: (config, now) => configTenantLimits(config.jobs.tenants, now),
      index: (limits) => new Set(limits.map((l) => l.tenant)),
      laneOf: (limited, record) => (record.tenant !== null && limited.has(record.tenant) ? record.tenant : null),
      notify: (work, tenant) => work.notifyTenant(tenant),
    });
  }
}
