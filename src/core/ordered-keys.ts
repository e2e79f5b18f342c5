/**
 * Ordered keys: jobs enqueued with the same `orderKey` in the same scope run one at a time, in
 * enqueue order, whatever their priorities. Pure decisions; each store applies them inside the
 * one atomic write of the transition that calls for them.
 *
 * A key's line is its jobs that have not left it, oldest first; the first is the key's head and
 * the only one that may run. The others wait: Pending, with `notBefore` at {@link ORDER_WAIT},
 * so every store's claim passes them over exactly as it passes over a backoff gate that has not
 * opened (no claim path looks at keys at all: a job without a key costs nothing more). When the
 * head leaves the line, the same write gives the next job its turn (`transitions.promote`),
 * restoring the gate it was enqueued with.
 *
 * A job leaves its line when it finishes: Completed, Cancelled, or Dead with `orderOnDead:
 * 'release'`. A head backing off after a failure, or reaped, is Pending again and keeps its place.
 * A Dead head with the default policy, `block`, keeps its place too, and so blocks its key until
 * it is retried (it runs again, as the head), discarded, or an operator releases the key. A job
 * retried after it left its line runs as a plain job: it does not take a place again.
 */
import { ErrorCode, invalidArgument, TelhaError } from './errors.ts';
import { idempotencySlot } from './scope.ts';
import { JobState, type JobRecord, type Micros, type OrderDeadPolicy } from './types.ts';

export type { OrderDeadPolicy };

export const ORDER_DEAD_POLICIES: readonly OrderDeadPolicy[] = ['block', 'release'];

/**
 * The gate of a job waiting behind its key's head: later than any time a job may be scheduled
 * for (`MAX_TIMESTAMP_MICROS`), so no gate opening ever reaches it; only its turn does.
 */
export const ORDER_WAIT: Micros = Number.MAX_SAFE_INTEGER;

/** Whether `record` waits behind its key's head (Pending, gated by {@link ORDER_WAIT}). */
export function isWaiting(record: JobRecord): boolean {
  return record.state === JobState.Pending && record.notBefore === ORDER_WAIT;
}

/** Whether a job in its key's line stays in it in state `after`'s state. */
export function staysInLine(after: JobRecord): boolean {
  switch (after.state) {
    case JobState.Pending:
    case JobState.Leased:
      return true;
    case JobState.Dead:
      return !after.orderReleaseOnDead;
    case JobState.Completed:
    case JobState.Failed:
    case JobState.Cancelled:
      return false;
    default: {
      const unreachable: never = after.state;
      return unreachable;
    }
  }
}

/**
 * An ordered key is unique within its scope, like an idempotency key: the same key in two
 * tenants names two lines. This is the slot it occupies, as a map key.
 */
export const orderSlot: (tenant: string | null, key: string) => string = idempotencySlot;

/** A request's policy: `block` when left out. */
export function checkOrderDeadPolicy(value: unknown, field = 'order_on_dead'): OrderDeadPolicy {
  if (value === undefined || value === null || value === '') return 'block';
  if (typeof value !== 'string' || !(ORDER_DEAD_POLICIES as readonly string[]).includes(value)) {
    throw invalidArgument(field, `must be one of ${ORDER_DEAD_POLICIES.join(', ')}`);
  }
  return value as OrderDeadPolicy;
}

/** A key whose line cannot move on by itself, as listings show it (`JobStore.blockedKeys`). */
export interface BlockedKey {
  /** The key's tenant, `null` for the system scope. */
  readonly tenant: string | null;
  readonly orderKey: string;
  /** The head: a Dead job (policy `block`); `null` when its record is gone (pruned past retention). */
  readonly head: JobRecord | null;
  /** Jobs waiting behind the head. */
  readonly waiting: number;
}

/**
 * Whether a line whose first job is `head` (`null`: pruned) is blocked: its head is Dead, or
 * gone and the next job still waiting. A running, backing-off or ready head is not blocked.
 */
export function lineBlocked(head: JobRecord | null): boolean {
  return head === null || head.state === JobState.Dead || isWaiting(head);
}

/** Blocked keys in listing order: by tenant (system first), then key. */
export function compareBlockedKeys(a: BlockedKey, b: BlockedKey): number {
  const ta = a.tenant ?? '';
  const tb = b.tenant ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.orderKey < b.orderKey ? -1 : a.orderKey > b.orderKey ? 1 : 0;
}

/** A release of a key whose line moves on by itself: nothing to release. */
export function keyNotBlocked(orderKey: string): TelhaError {
  return new TelhaError(
    ErrorCode.FailedPrecondition,
    `order key ${orderKey}: not blocked (its first job is not dead, and is running, ready or backing off)`,
  );
}
