/**
 * Kind limits as stored in RocksDB's `default` column family:
 *
 *     kind-limit/<kind prefix UTF-8>   → `[KIND_LIMIT_VERSION][JSON]`
 *
 * The value is small JSON with snake_case fields, readable from any language, like a pause's.
 * Token buckets are not stored: they live in memory and a reopened store starts them full.
 */
import { CorruptRecordError } from '../core/errors.ts';
import type { KindLimit } from '../core/kind-limits.ts';

export const KIND_LIMIT_VERSION = 1;
export const KIND_LIMIT_PREFIX = Buffer.from('kind-limit/');

export function kindLimitRowKey(kindPrefix: string): Buffer {
  return Buffer.concat([KIND_LIMIT_PREFIX, Buffer.from(kindPrefix, 'utf8')]);
}

interface KindLimitJson {
  readonly kind_prefix: string;
  readonly concurrency: number | null;
  readonly rate: { readonly count: number; readonly period_ms: number } | null;
  readonly set_at: number;
  readonly by: string;
}

export function encodeKindLimit(limit: KindLimit): Buffer {
  const json: KindLimitJson = {
    kind_prefix: limit.kindPrefix,
    concurrency: limit.concurrency,
    rate: limit.rate === null ? null : { count: limit.rate.count, period_ms: limit.rate.periodMs },
    set_at: limit.setAt,
    by: limit.by,
  };
  return Buffer.concat([Buffer.from([KIND_LIMIT_VERSION]), Buffer.from(JSON.stringify(json), 'utf8')]);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}

export function decodeKindLimit(value: Uint8Array, where: string): KindLimit {
  try {
    if (value[0] !== KIND_LIMIT_VERSION) throw new Error(`unknown kind limit version ${value[0]}`);
    const json = JSON.parse(Buffer.from(value.subarray(1)).toString('utf8')) as KindLimitJson;
    const rate = json.rate;
    if (
      typeof json.kind_prefix !== 'string' ||
      json.kind_prefix === '' ||
      (json.concurrency !== null && !isCount(json.concurrency)) ||
      (rate !== null && (typeof rate !== 'object' || !isCount(rate.count) || !isCount(rate.period_ms))) ||
      typeof json.set_at !== 'number' ||
      typeof json.by !== 'string'
    ) {
      throw new Error('malformed kind limit');
    }
    return {
      kindPrefix: json.kind_prefix,
      concurrency: json.concurrency,
      rate: rate === null ? null : { count: rate.count, periodMs: rate.period_ms },
      setAt: json.set_at,
      by: json.by,
    };
  } catch (error) {
    throw new CorruptRecordError(where, (error as Error).message);
  }
}
