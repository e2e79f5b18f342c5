/**
 * Pauses: a kind prefix in a scope (or everywhere) whose Pending jobs are not leased until it is
 * resumed. Enqueues are still accepted and leased jobs finish normally; only claims skip the
 * paused work. Every backend and the engine ask these same functions, so what a pause covers
 * cannot differ between stores.
 */
import { ErrorCode, invalidArgument, TelhaError } from './errors.ts';
import { MAX_KIND_BYTES, SYSTEM_KIND_PREFIX } from './bounds.ts';
import { leaseKindMatches } from './transitions.ts';
import type { JobRecord, Micros, QueueScope, ScopeFilter } from './types.ts';
import { checkToken } from './validate.ts';

/**
 * Pauses one scope may hold (a tenant, the system scope, or `everywhere`). Every claim consults
 * the pauses, so the bound keeps one tenant from making everybody's claims slower.
 */
export const MAX_PAUSES_PER_SCOPE = 100;
/** Pauses the whole store may hold, whatever tenants do: each server keeps them all in memory. */
export const MAX_PAUSES = 10_000;

/** Where a pause applies: one scope, or every scope (an operator's). */
export type PauseScope = QueueScope | 'everywhere';

export interface Pause {
  readonly scope: PauseScope;
  /** Jobs whose kind starts with this are paused (a `system:` kind only by a `system:` prefix). */
  readonly kindPrefix: string;
  readonly pausedAt: Micros;
  /** Who paused it (a token's subject, or `local`), for operators. */
  readonly by: string;
}

/** The bounds a store checks before writing a pause. */
export interface PauseBounds {
  readonly maxPerScope: number;
  readonly maxTotal: number;
}

export const DEFAULT_PAUSE_BOUNDS: PauseBounds = Object.freeze({
  maxPerScope: MAX_PAUSES_PER_SCOPE,
  maxTotal: MAX_PAUSES,
});

/** A kind prefix to pause: a token of 1-255 bytes, like a kind. */
export function checkPausePrefix(prefix: unknown, field = 'kind_prefix'): string {
  return checkToken(field, prefix, MAX_KIND_BYTES);
}

/** A pause's scope as a stable string: a map key, the same on every backend. */
export function pauseScopeKey(scope: PauseScope): string {
  if (scope === 'everywhere') return '*';
  return scope.type === 'system' ? 's' : `t:${scope.tenant}`;
}

/** A pause's identity: its scope and prefix. */
export function pauseKey(scope: PauseScope, kindPrefix: string): string {
  return `${pauseScopeKey(scope)}\u0000${kindPrefix}`;
}

/** Whether a pause covers a kind: `leaseKindMatches` with the prefix, so `system:` kinds only by a `system:` prefix. */
export function pauseCoversKind(kindPrefix: string, kind: string): boolean {
  return leaseKindMatches(kind, [kindPrefix]);
}

/** Whether a pause applies to jobs of `tenant` (`null`: the system scope). */
export function pauseCoversTenant(scope: PauseScope, tenant: string | null): boolean {
  if (scope === 'everywhere') return true;
  return scope.type === 'system' ? tenant === null : scope.tenant === tenant;
}

/** Whether any of `pauses` holds back a job of this tenant and kind. */
export function isPaused(pauses: Iterable<Pause>, tenant: string | null, kind: string): boolean {
  for (const pause of pauses) {
    if (pauseCoversTenant(pause.scope, tenant) && pauseCoversKind(pause.kindPrefix, kind)) return true;
  }
  return false;
}

/** Whether a Pending record is held back by a pause. */
export function isRecordPaused(pauses: Iterable<Pause>, record: Pick<JobRecord, 'tenant' | 'kind'>): boolean {
  return isPaused(pauses, record.tenant, record.kind);
}

/**
 * Whether a listing for `filter` shows `pause`: every pause for `any`; for one scope, that
 * scope's pauses and the pauses everywhere, since those hold its jobs back too.
 */
export function pauseInFilter(pause: Pause, filter: ScopeFilter | 'everywhere'): boolean {
  if (filter === 'everywhere') return pause.scope === 'everywhere';
  const scope = pause.scope;
  if (filter.type === 'any' || scope === 'everywhere') return true;
  if (scope.type === 'system') return filter.type === 'system';
  return filter.type === 'tenant' && filter.tenant === scope.tenant;
}

/** The order pauses list in on every backend: everywhere first, then system, then by tenant, then prefix. */
export function comparePauses(a: Pause, b: Pause): number {
  const ka = pauseKey(a.scope, a.kindPrefix);
  const kb = pauseKey(b.scope, b.kindPrefix);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/**
 * Check a new pause against the pauses held: `null` when it is already held (nothing to write),
 * else throws `failed_precondition` past a bound (not `resource_exhausted`, which clients retry). Pure, so every store refuses the same way and
 * before writing anything.
 */
export function admitPause(held: readonly Pause[], pause: Pause, bounds: PauseBounds): Pause | null {
  const key = pauseKey(pause.scope, pause.kindPrefix);
  const existing = held.find((p) => pauseKey(p.scope, p.kindPrefix) === key);
  if (existing !== undefined) return existing;
  const scopeKey = pauseScopeKey(pause.scope);
  const inScope = held.filter((p) => pauseScopeKey(p.scope) === scopeKey).length;
  if (inScope >= bounds.maxPerScope) {
    throw new TelhaError(
      ErrorCode.FailedPrecondition,
      `the scope already holds ${bounds.maxPerScope} pauses, the most one scope may (MAX_PAUSES_PER_SCOPE); resume one first`,
    );
  }
  if (held.length >= bounds.maxTotal) {
    throw new TelhaError(
      ErrorCode.FailedPrecondition,
      `the store already holds ${bounds.maxTotal} pauses, the most it may (MAX_PAUSES); resume one first`,
    );
  }
  return null;
}

/** Check a pause's fields; `invalid_argument` naming the field. */
export function checkPause(pause: Pause): Pause {
  const kindPrefix = checkPausePrefix(pause.kindPrefix);
  if (pause.scope !== 'everywhere' && pause.scope.type === 'tenant' && kindPrefix.startsWith(SYSTEM_KIND_PREFIX)) {
    throw invalidArgument('kind_prefix', 'the "system:" prefix is reserved for the system scope');
  }
  return { ...pause, kindPrefix };
}
