/** Pieces every backend needs the same way. */
import type { JobRecord, Micros, ScopeFilter } from '../core/types.ts';

/**
 * `created_at` is strictly increasing per store: two jobs enqueued in the same
 * microsecond still get distinct, ordered timestamps, so they lease in enqueue order.
 */
export class CreatedAtSequence {
  private last: Micros;

  constructor(last: Micros) {
    this.last = last;
  }

  next(now: Micros): Micros {
    this.last = Math.max(now, this.last + 1);
    return this.last;
  }

  get current(): Micros {
    return this.last;
  }
}

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

/** Identifies an idempotency key within its scope, as a map key. */
export function idempotencySlot(tenant: string | null, key: string): string {
  return `${tenant === null ? '' : `t:${tenant}`}\u0000${key}`;
}
