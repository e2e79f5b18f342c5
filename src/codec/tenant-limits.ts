/**
 * Tenant limits as stored in RocksDB's `default` column family (`limits.ts`):
 *
 *     tenant-limit/<tenant UTF-8>   → `[TENANT_LIMIT_VERSION][JSON]`
 *
 * with fields `tenant`, `concurrency`, `rate`, `weight`, `set_at`, `by`.
 */
import { MAX_TENANT_WEIGHT, type TenantLimit } from '../core/tenant-limits.ts';
import { isCount, limitCodec } from './limits.ts';

export const TENANT_LIMIT_VERSION = 1;

const codec = limitCodec<TenantLimit>({
  what: 'tenant limit',
  prefix: 'tenant-limit/',
  version: TENANT_LIMIT_VERSION,
  nameField: 'tenant',
  name: (limit) => limit.tenant,
  own: (limit) => ({ weight: limit.weight }),
  read: (common, tenant, json) => {
    const weight = json['weight'];
    if (!isCount(weight) || weight > MAX_TENANT_WEIGHT) return undefined;
    return { tenant, concurrency: common.concurrency, rate: common.rate, weight, setAt: common.setAt, by: common.by };
  },
});

export const TENANT_LIMIT_PREFIX = codec.prefix;
export const tenantLimitRowKey = codec.rowKey;
export const encodeTenantLimit = codec.encode;
export const decodeTenantLimit = codec.decode;
