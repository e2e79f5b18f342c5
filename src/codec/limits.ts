/**
 * Limits as stored in RocksDB's `default` column family, one codec for every sort of limit
 * (`kind-limits.ts`, `tenant-limits.ts`):
 *
 *     <prefix><name UTF-8>   → `[version][JSON]`
 *
 * The value is small JSON with snake_case fields, readable from any language, like a pause's:
 * the name's field, `concurrency`, `rate`, the sort's own fields, `set_at` and `by`, in that
 * order (the bytes every stored row already has). Token buckets are not stored: they live in
 * memory and a reopened store starts them full.
 */
import { CorruptRecordError } from '../core/errors.ts';
import type { Rate } from '../core/rate.ts';
import type { Micros } from '../core/types.ts';

/** What every limit has besides its name and its sort's own fields. */
export interface StoredLimit {
  readonly concurrency: number | null;
  readonly rate: Rate | null;
  readonly setAt: Micros;
  readonly by: string;
}

export interface LimitCodec<L extends StoredLimit> {
  readonly prefix: Buffer;
  readonly rowKey: (name: string) => Buffer;
  readonly encode: (limit: L) => Buffer;
  /** Throws `CorruptRecordError` naming `where` for a value that is not one. */
  readonly decode: (value: Uint8Array, where: string) => L;
}

/** A whole count: 1 or more. */
export function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}

/**
 * The codec of one sort of limit. `own` gives its fields beyond the common ones as they are
 * stored; `read` checks them in a stored value (`undefined`: malformed) and returns the limit
 * with them.
 */
export function limitCodec<L extends StoredLimit>(sort: {
  /** As messages name it: `kind limit`. */
  readonly what: string;
  readonly prefix: string;
  readonly version: number;
  /** The JSON field holding its name: `kind_prefix`. */
  readonly nameField: string;
  readonly name: (limit: L) => string;
  readonly own: (limit: L) => Record<string, unknown>;
  readonly read: (common: StoredLimit, name: string, json: Record<string, unknown>) => L | undefined;
}): LimitCodec<L> {
  const prefix = Buffer.from(sort.prefix);
  return {
    prefix,
    rowKey: (name) => Buffer.concat([prefix, Buffer.from(name, 'utf8')]),
    encode: (limit) => {
      const json = {
        [sort.nameField]: sort.name(limit),
        concurrency: limit.concurrency,
        rate: limit.rate === null ? null : { count: limit.rate.count, period_ms: limit.rate.periodMs },
        ...sort.own(limit),
        set_at: limit.setAt,
        by: limit.by,
      };
      return Buffer.concat([Buffer.from([sort.version]), Buffer.from(JSON.stringify(json), 'utf8')]);
    },
    decode: (value, where) => {
      try {
        if (value[0] !== sort.version) throw new Error(`unknown ${sort.what} version ${value[0]}`);
        const json = JSON.parse(Buffer.from(value.subarray(1)).toString('utf8')) as Record<string, unknown>;
        const name = json[sort.nameField];
        const { concurrency, set_at: setAt, by } = json;
        const rate = json['rate'] as { count?: unknown; period_ms?: unknown } | null;
        if (
          typeof name !== 'string' ||
          name === '' ||
          (concurrency !== null && !isCount(concurrency)) ||
          (rate !== null && (typeof rate !== 'object' || !isCount(rate.count) || !isCount(rate.period_ms))) ||
          typeof setAt !== 'number' ||
          typeof by !== 'string'
        ) {
          throw new Error(`malformed ${sort.what}`);
        }
        const common: StoredLimit = {
          concurrency,
          rate: rate === null ? null : { count: rate.count as number, periodMs: rate.period_ms as number },
          setAt,
          by,
        };
        const limit = sort.read(common, name, json);
        if (limit === undefined) throw new Error(`malformed ${sort.what}`);
        return limit;
      } catch (error) {
        throw new CorruptRecordError(where, (error as Error).message);
      }
    },
  };
}
