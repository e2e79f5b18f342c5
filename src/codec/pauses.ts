/**
 * Pauses as stored in RocksDB's `default` column family:
 *
 *     pause/<0 for everywhere | 1 + scope 32><kind prefix UTF-8>   → `[PAUSE_VERSION][JSON]`
 *
 * The value is small JSON with snake_case fields, readable from any language. PostgreSQL keeps
 * the same fields as columns of `kind_pauses`.
 */
import { CorruptRecordError } from '../core/errors.ts';
import type { Pause, PauseScope } from '../core/pauses.ts';
import { SYSTEM_SCOPE, tenantScope } from '../core/types.ts';
import { scopeBytes } from './keys.ts';

export const PAUSE_VERSION = 1;
export const PAUSE_PREFIX = Buffer.from('pause/');

/** The 32 scope bytes a pause applies to, or `null` for everywhere. */
export function pauseScopeBytes(scope: PauseScope): Buffer | null {
  return scope === 'everywhere' ? null : scopeBytes(scope);
}

export function pauseRowKey(scope: PauseScope, kindPrefix: string): Buffer {
  const bytes = pauseScopeBytes(scope);
  const head = bytes === null ? Buffer.from([0]) : Buffer.concat([Buffer.from([1]), bytes]);
  return Buffer.concat([PAUSE_PREFIX, head, Buffer.from(kindPrefix, 'utf8')]);
}

interface PauseJson {
  readonly everywhere: boolean;
  readonly tenant: string | null;
  readonly kind_prefix: string;
  readonly paused_at: number;
  readonly by: string;
}

export function encodePause(pause: Pause): Buffer {
  const json: PauseJson = {
    everywhere: pause.scope === 'everywhere',
    tenant: pause.scope !== 'everywhere' && pause.scope.type === 'tenant' ? pause.scope.tenant : null,
    kind_prefix: pause.kindPrefix,
    paused_at: pause.pausedAt,
    by: pause.by,
  };
  return Buffer.concat([Buffer.from([PAUSE_VERSION]), Buffer.from(JSON.stringify(json), 'utf8')]);
}

export function decodePause(value: Uint8Array, where: string): Pause {
  try {
    if (value[0] !== PAUSE_VERSION) throw new Error(`unknown pause version ${value[0]}`);
    const json = JSON.parse(Buffer.from(value.subarray(1)).toString('utf8')) as PauseJson;
    if (typeof json.kind_prefix !== 'string' || typeof json.paused_at !== 'number' || typeof json.by !== 'string') {
      throw new Error('malformed pause');
    }
    const scope: PauseScope = json.everywhere
      ? 'everywhere'
      : json.tenant === null
        ? SYSTEM_SCOPE
        : tenantScope(json.tenant);
    return { scope, kindPrefix: json.kind_prefix, pausedAt: json.paused_at, by: json.by };
  } catch (error) {
    throw new CorruptRecordError(where, (error as Error).message);
  }
}
