/**
 * Scope rules: which jobs a caller may see, and what an idempotency key is
 * unique within. Every backend and the engine ask these same functions, so a
 * tenant's view cannot differ between stores.
 */
import { notFound } from './errors.ts';
import { SYSTEM_SCOPE, tenantScope, type JobRecord, type QueueScope, type ScopeFilter } from './types.ts';

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

/** A tenant never learns that another tenant's job exists: out of scope reads as not found. */
export function assertInScope(record: JobRecord, scope: ScopeFilter): void {
  if (!inScope(record, scope)) throw notFound(`job ${record.jobId}`);
}

/** The scope a job belongs to: its tenant's, or the system scope. A completion's successors go there. */
export function scopeOfRecord(record: Pick<JobRecord, 'tenant'>): QueueScope {
  return record.tenant === null ? SYSTEM_SCOPE : tenantScope(record.tenant);
}
