/**
 * Who may do what. Bearer tokens from `server.tokens`, each with a role; the
 * comparison is constant-time and tokens never reach a log line.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { TokenConfig } from '../core/config.ts';
import { ErrorCode, invalidArgument, TelhaError } from '../core/errors.ts';
import type { PauseScope } from '../core/pauses.ts';
import { ANY_SCOPE, SYSTEM_SCOPE, tenantScope, type QueueScope, type ScopeFilter } from '../core/types.ts';
import { checkTenant } from '../core/validate.ts';

export type Role = 'tenant' | 'worker' | 'operator';

/**
 * What a call needs: enqueue, read (show/list/counts), work (lease and fenced submissions), retry,
 * cancel, schedule (create, change, read and delete schedules). A tenant may cancel its own jobs
 * (its scope is enforced by `resolveScope`); a worker may not cancel at all: it gives a job up with
 * `release` or `fail`. pause (pause, resume and list pauses): a tenant in its own scope only,
 * an operator in any scope or everywhere (`pauseScope`). Watch (the change feed) is a tenant's in
 * its own scope and an operator's in any; a worker has no use for it, and it would show every
 * tenant's jobs. limit (set, clear and list kind limits): operators only, since a limit holds
 * every tenant's jobs of the prefix. backup (copy the store to a directory on the server's machine):
 * operators only, since the copy holds every tenant's jobs and is written where the server runs.
 */
export type Permission =
  'enqueue' | 'read' | 'work' | 'retry' | 'cancel' | 'schedule' | 'pause' | 'watch' | 'limit' | 'backup';

const GRANTS: Readonly<Record<Role, readonly Permission[]>> = {
  tenant: ['enqueue', 'read', 'cancel', 'schedule', 'pause', 'watch'],
  worker: ['work'],
  operator: ['enqueue', 'read', 'work', 'retry', 'cancel', 'schedule', 'pause', 'watch', 'limit', 'backup'],
};

/** Who did it, as an event detail names them: `tenant:acme` for a tenant token, else the token's name. */
export function principalLabel(principal: Principal): string {
  return principal.role === 'tenant' ? `tenant:${principal.tenant ?? ''}` : principal.name;
}

export interface Principal {
  readonly role: Role;
  /** The bound tenant, for the tenant role. */
  readonly tenant: string | null;
  /** A label for logs: the token's `name`, else its role. Never the token. */
  readonly name: string;
}

/** With no tokens configured every caller is an operator; the server then listens on loopback only. */
export const OPEN_ACCESS: Principal = Object.freeze({
  role: 'operator',
  tenant: null,
  name: 'anonymous (no tokens configured)',
});

interface KnownToken {
  readonly digest: Buffer;
  readonly principal: Principal;
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export class Authenticator {
  private readonly tokens: readonly KnownToken[];

  constructor(tokens: readonly TokenConfig[]) {
    this.tokens = tokens.map((t) => ({
      digest: digest(t.token),
      principal: { role: t.role, tenant: t.tenant ?? null, name: t.name ?? t.role },
    }));
  }

  /** No tokens configured: anyone who can reach the (loopback) socket is an operator. */
  get open(): boolean {
    return this.tokens.length === 0;
  }

  /** Resolve an `authorization` header; throws `unauthenticated` for a missing or unknown token. */
  authenticate(authorization: string | null): Principal {
    if (this.open) return OPEN_ACCESS;
    const match = authorization === null ? null : /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match?.[1])
      throw new TelhaError(ErrorCode.Unauthenticated, 'missing bearer token (authorization: Bearer <token>)');
    // Compare digests of equal length against every known token, without stopping early,
    // so neither the length nor the position of a match shows in the timing.
    const presented = digest(match[1]);
    let found: Principal | null = null;
    for (const known of this.tokens) {
      if (timingSafeEqual(presented, known.digest)) found = known.principal;
    }
    if (found === null) throw new TelhaError(ErrorCode.Unauthenticated, 'unknown bearer token');
    return found;
  }
}

/** Whether `principal`'s role holds `permission`. */
export function hasPermission(principal: Principal, permission: Permission): boolean {
  return GRANTS[principal.role].includes(permission);
}

export function requirePermission(principal: Principal, permission: Permission): void {
  if (!hasPermission(principal, permission)) {
    throw new TelhaError(ErrorCode.PermissionDenied, `a ${principal.role} token may not ${permission}`);
  }
}

/** A scope as a request names it: a tenant, the system scope, or nothing. */
export type RequestedScope = { tenant: string } | { system: true } | null;

/**
 * The scope a call runs in. A tenant token is held to its own tenant (naming
 * another one is refused); an operator names any scope, or none for every
 * scope where the call allows it.
 */
export function resolveScope(principal: Principal, requested: RequestedScope, allowAny: boolean): ScopeFilter {
  if (principal.role === 'tenant') {
    const own = principal.tenant as string;
    if (requested === null || ('tenant' in requested && requested.tenant === own)) return tenantScope(own);
    throw new TelhaError(ErrorCode.PermissionDenied, `a token of tenant ${own} may only address its own scope`);
  }
  if (requested === null) {
    if (allowAny) return ANY_SCOPE;
    throw new TelhaError(ErrorCode.InvalidArgument, 'scope: name a tenant or the system scope', { field: 'scope' });
  }
  if ('system' in requested) return SYSTEM_SCOPE;
  return tenantScope(checkTenant(requested.tenant, 'scope.tenant'));
}

/**
 * Where a pause or resume applies: one scope, or everywhere for an operator. Refused before
 * anything is written, naming the field: a tenant token naming another tenant (`scope.tenant`)
 * or asking for `everywhere`, both `permission_denied`; `everywhere` with a scope too is
 * `invalid_argument`.
 */
export function pauseScope(principal: Principal, requested: RequestedScope, everywhere: boolean): PauseScope {
  if (everywhere) {
    if (principal.role !== 'operator') {
      throw new TelhaError(
        ErrorCode.PermissionDenied,
        `everywhere: a ${principal.role} token may pause its own scope only`,
        {
          field: 'everywhere',
        },
      );
    }
    if (requested !== null) throw invalidArgument('everywhere', 'name a scope or set everywhere, not both');
    return 'everywhere';
  }
  if (
    principal.role === 'tenant' &&
    requested !== null &&
    !('tenant' in requested && requested.tenant === principal.tenant)
  ) {
    const field = 'tenant' in requested ? 'scope.tenant' : 'scope.system';
    throw new TelhaError(
      ErrorCode.PermissionDenied,
      `${field}: a token of tenant ${principal.tenant ?? ''} may only pause its own scope`,
      {
        field,
      },
    );
  }
  return writeScope(resolveScope(principal, requested, false));
}

/** The single scope a write goes to; `any` is not a place to write. */
export function writeScope(scope: ScopeFilter): QueueScope {
  if (scope.type === 'any')
    throw new TelhaError(ErrorCode.InvalidArgument, 'scope: name a tenant or the system scope', { field: 'scope' });
  return scope;
}
