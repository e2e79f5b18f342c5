/**
 * Per-kind policy from `[jobs.kinds."<prefix>"]`: the longest prefix matching a kind wins, as a
 * whole; a key its table leaves out takes the `jobs.*` value of the same name (backoff, attempts)
 * or none (timeout, concurrency, rate). A `system:` kind is matched only by a prefix that itself
 * starts with `system:`, as in a lease filter, so a tenant's `"s"` prefix never paces the
 * server's own maintenance.
 */
import type { JobsConfig, KindConfig } from './config.ts';
import { SYSTEM_KIND_PREFIX } from './bounds.ts';
import { parseRate, type Rate } from './rate.ts';

/** What `kindPolicy` needs of the configuration. */
export type KindPolicyConfig = Pick<
  JobsConfig,
  'max_attempts' | 'backoff_base_secs' | 'backoff_factor' | 'backoff_cap_secs' | 'kinds'
>;

/** The rules one kind runs under, every default applied. */
export interface KindPolicy {
  /** The `jobs.kinds` prefix that matched, or `null` when none did (the `jobs.*` values apply). */
  readonly prefix: string | null;
  readonly backoffBaseSecs: number;
  readonly backoffFactor: number;
  readonly backoffCapSecs: number;
  /** The ceiling for jobs that set none of their own. */
  readonly maxAttempts: number;
  /** The longest one attempt may run, or `null` for no limit. */
  readonly timeoutSecs: number | null;
  readonly concurrency: number | null;
  readonly rate: Rate | null;
}

interface PrefixIndex {
  readonly byPrefix: ReadonlyMap<string, KindConfig>;
  /** The distinct prefix lengths, longest first: a lookup tries only these. */
  readonly lengths: readonly number[];
}

/** One index per `kinds` table (configuration is immutable once loaded). */
const indexes = new WeakMap<object, PrefixIndex>();

function indexOf(kinds: JobsConfig['kinds']): PrefixIndex {
  let index = indexes.get(kinds);
  if (index === undefined) {
    const byPrefix = new Map(Object.entries(kinds));
    const lengths = [...new Set([...byPrefix.keys()].map((p) => p.length))].sort((a, b) => b - a);
    index = { byPrefix, lengths };
    indexes.set(kinds, index);
  }
  return index;
}

/** The longest `jobs.kinds` prefix of `kind` and its table, or `null`. */
export function kindEntry(kinds: JobsConfig['kinds'], kind: string): readonly [string, KindConfig] | null {
  const { byPrefix, lengths } = indexOf(kinds);
  const system = kind.startsWith(SYSTEM_KIND_PREFIX);
  for (const length of lengths) {
    if (length > kind.length) continue;
    const prefix = kind.slice(0, length);
    const entry = byPrefix.get(prefix);
    if (entry === undefined) continue;
    if (system && !prefix.startsWith(SYSTEM_KIND_PREFIX)) continue;
    return [prefix, entry];
  }
  return null;
}

/** The policy `kind` runs under: its longest matching `jobs.kinds` table over the `jobs.*` defaults. */
export function kindPolicy(config: KindPolicyConfig, kind: string): KindPolicy {
  const found = kindEntry(config.kinds, kind);
  const entry: KindConfig = found?.[1] ?? {};
  const base = entry.backoff_base_secs ?? config.backoff_base_secs;
  return {
    prefix: found?.[0] ?? null,
    backoffBaseSecs: base,
    backoffFactor: entry.backoff_factor ?? config.backoff_factor,
    // A kind paced at a base above the global cap still waits its base: the base is a floor for the cap.
    backoffCapSecs:
      entry.backoff_cap_secs ??
      (entry.backoff_base_secs === undefined ? config.backoff_cap_secs : Math.max(base, config.backoff_cap_secs)),
    maxAttempts: entry.max_attempts ?? config.max_attempts,
    timeoutSecs: entry.timeout_secs ?? null,
    concurrency: entry.concurrency ?? null,
    // Validated at load, so this parse cannot fail.
    rate: entry.rate === undefined ? null : parseRate(entry.rate),
  };
}
