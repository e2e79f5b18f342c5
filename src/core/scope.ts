/**
 * Scope rules: which jobs a caller may see, and what an idempotency key is
 * unique within. Every backend and the engine ask these same functions, so a
 * tenant's view cannot differ between stores.
 */
import type { JobRecord, ScopeFilter } from './types.ts';

/** Whether a job belongs to `scope`. A tenant's filter matches its own jobs only; `any` matches all. */
export function inScope(record: Pick<JobRecord, 'tenant'>, scope: ScopeFilter): boolean {
  switch (scope.type) {
    case 'any':
      return true;
    case 'system':
      return record.tenant === null;
    case 'tenant':
      return record.tenant === scope.tenant;
    default: {
      const never: never = scope;
      throw new Error(`unknown scope ${String(never)}`);
    }
  }
}

/**
 * An idempotency key is unique within its scope: the same key in two tenants
 * names two jobs. This is the slot a key occupies, as a map key.
 */
export function idempotencySlot(tenant: string | null, key: string): string {
  return `${tenant === null ? '' : `t:${tenant}`}\u0000${key}`;
}
