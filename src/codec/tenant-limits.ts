/**
 * Tenant limits as stored in RocksDB's `default` column family:
 *
 *     tenant-limit/<tenant UTF-8>   → `[TENANT_LIMIT_VERSION][JSON]`
 *
 * Small JSON with snake_case fields, as a kind limit's. Token buckets are not stored: they live
 * in memory and a reopened store starts them full.
 */
import { CorruptRecordError } from '../core/errors.ts';
import { MAX_TENANT_WEIGHT, type TenantLimit } from '../core/tenant-limits.ts';

export const TENANT_LIMIT_VERSION = 1;
export const TENANT_LIMIT_PREFIX = Buffer.from('tenant-limit/');

export function tenantLimitRowKey(tenant: string): Buffer {
  return Buffer.concat([TENANT_LIMIT_PREFIX, Buffer.from(tenant, 'utf8')]);
}

interface TenantLimitJson {
  readonly tenant: string;
  readonly concurrency: number | null;
  readonly rate: { readonly count: number; readonly period_ms: number } | null;
  readonly weight: number;
  readonly set_at: number;
  readonly by: string;
}

export function encodeTenantLimit(limit: TenantLimit): Buffer {
  const json: TenantLimitJson = {
    tenant: limit.tenant,
    concurrency: limit.concurrency,
    rate: limit.rate === null ? null : { count: limit.rate.count, period_ms: limit.rate.periodMs },
    weight: limit.weight,
    set_at: limit.setAt,
    by: limit.by,
  };
  return Buffer.concat([Buffer.from([TENANT_LIMIT_VERSION]), Buffer.from(JSON.stringify(json), 'utf8')]);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}

export function decodeTenantLimit(value: Uint8Array, where: string): TenantLimit {
  try {
    if (value[0] !== TENANT_LIMIT_VERSION) throw new Error(`unknown tenant limit version ${value[0]}`);
    const json = JSON.parse(Buffer.from(value.subarray(1)).toString('utf8')) as TenantLimitJson;
    const rate = json.rate;
    if (
      typeof json.tenant !== 'string' ||
      json.tenant === '' ||
      (json.concurrency !== null && !isCount(json.concurrency)) ||
      (rate !== null && (typeof rate !== 'object' || !isCount(rate.count) || !isCount(rate.period_ms))) ||
      !isCount(json.weight) ||
      json.weight > MAX_TENANT_WEIGHT ||
      typeof json.set_at !== 'number' ||
      typeof json.by !== 'string'
    ) {
      throw new Error('malformed tenant limit');
    }
    return {
      tenant: json.tenant,
      concurrency: json.concurrency,
      rate: rate === null ? null : { count: rate.count, periodMs: rate.period_ms },
      weight: json.weight,
      setAt: json.set_at,
      by: json.by,
    };
  } catch (error) {
    throw new CorruptRecordError(where, (error as Error).message);
  }
}
