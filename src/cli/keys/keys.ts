/** `telha keys blocked` and `telha keys release <key>`: ordered keys a dead (or pruned) head holds. */
import { requiredScope, scopeOf, type ScopeOptions } from '../args.ts';
import { formatTable, jobJson } from '../format.ts';
import { printLine, type CliIo, type OperatorClient } from '../io.ts';
import type { RemoteBlockedKey } from '../../client/client.ts';

export interface BlockedKeysOptions extends ScopeOptions {
  readonly limit?: number;
  readonly json?: boolean;
}

export function blockedKeyJson(key: RemoteBlockedKey): Record<string, unknown> {
  return {
    scope: key.tenant ?? '(system)',
    orderKey: key.orderKey,
    head: key.head === null ? null : jobJson(key.head),
    waiting: key.waiting,
  };
}

export function formatBlockedKeys(keys: readonly RemoteBlockedKey[]): string {
  if (keys.length === 0) return '(no blocked keys)';
  return formatTable([
    ['SCOPE', 'ORDER KEY', 'HEAD', 'WAITING'],
    ...keys.map((k) => [
      k.tenant ?? '(system)',
      k.orderKey,
      k.head === null ? '(pruned)' : `${k.head.jobId} (dead)`,
      String(k.waiting),
    ]),
  ]);
}

export async function listBlockedKeys(options: BlockedKeysOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const scope = scopeOf(options);
  const keys = await client.blockedKeys({
    ...(scope === undefined ? {} : { scope }),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
  });
  if (options.json) printLine(io.stdout, { keys: keys.map(blockedKeyJson) });
  else printLine(io.stdout, formatBlockedKeys(keys));
  return 0;
}

export interface ReleaseKeyOptions extends ScopeOptions {
  readonly orderKey: string;
  /** A token was given: a tenant token's own scope is the default. */
  readonly withToken: boolean;
  readonly json?: boolean;
}

/** Prints the id of the job whose turn it is now, or says none waited. */
export async function releaseKey(options: ReleaseKeyOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const scope = options.withToken ? scopeOf(options) : requiredScope(options, 'keys release');
  const next = await client.releaseKey(options.orderKey, scope === undefined ? {} : { scope });
  if (options.json) printLine(io.stdout, { next: next === null ? null : jobJson(next) });
  else
    printLine(
      io.stdout,
      next === null
        ? `released ${options.orderKey} (no job waited)`
        : `released ${options.orderKey}: ${next.jobId} runs next`,
    );
  return 0;
}
