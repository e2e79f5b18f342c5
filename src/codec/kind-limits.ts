/**
 * Kind limits as stored in RocksDB's `default` column family (`limits.ts`):
 *
 *     kind-limit/<kind prefix UTF-8>   → `[KIND_LIMIT_VERSION][JSON]`
 *
 * with fields `kind_prefix`, `concurrency`, `rate`, `set_at`, `by`.
 */
import type { KindLimit } from '../core/kind-limits.ts';
import { limitCodec } from './limits.ts';

export const KIND_LIMIT_VERSION = 1;

const codec = limitCodec<KindLimit>({
  what: 'kind limit',
  prefix: 'kind-limit/',
  version: KIND_LIMIT_VERSION,
  nameField: 'kind_prefix',
  name: (limit) => limit.kindPrefix,
  own: () => ({}),
  read: (common, kindPrefix) => ({ kindPrefix, ...common }),
});

export const KIND_LIMIT_PREFIX = codec.prefix;
export const kindLimitRowKey = codec.rowKey;
export const encodeKindLimit = codec.encode;
export const decodeKindLimit = codec.decode;
