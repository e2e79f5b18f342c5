/**
 * Tenant limits: per tenant, at most `concurrency` jobs leased at once, at most `rate.count`
 * leases per `rate.periodMs` (a token bucket, burst = count, as kind limits have), and a
 * `weight` for the fleet's fair order (a tenant of weight 4 is served four times as often as one
 * of weight 1 while both have work). A tenant without a limit has no bound and weight 1; system
 * jobs belong to no tenant and are never tenant-limited.
 *
 * The claim rule, the same on every backend: a job is taken only when its kind's lane has room
 * (`core/kind-limits.ts`) and its tenant has room (`concurrency - leased - taken so far > 0`
 * and a whole token left). While no tenant limit exists a claim runs as before (key order, or
 * the round-robin fair order of `core/fair-order.ts`); once one exists, a fair claim picks the
 * next tenant by smooth weighted round robin ({@link WeightedTurns}), which is deterministic, so
 * weights 1:2:4 over 7 turns give exactly 1, 2 and 4 turns to tenants that stay backlogged.
 *
 * This module is the plain reference ({@link TenantBudget}, {@link pickForTenants}); every store
 * gathers candidates its own way (at most `limit` ready jobs per tenant) and hands them here.
 */
import { invalidArgument } from './errors.ts';
import { MAX_TENANT_LIMITS, MAX_TENANT_WEIGHT } from './bounds.ts';
import {
  admitLimit,
  checkConcurrency,
  checkLimitRate,
  laneRoom,
  spendBuckets,
  tokensNow,
  type LaneBudget,
  type TokenBucket,
} from './kind-limits.ts';
import { parseRate, type Rate } from './rate.ts';
import type { Micros } from './types.ts';
import { checkTenant } from './validate.ts';

export { MAX_TENANT_LIMITS, MAX_TENANT_WEIGHT };
/** A tenant without a limit, or a limit without a weight, has this weight. */
export const DEFAULT_TENANT_WEIGHT = 1;

/** A limit on one tenant's jobs, across every kind and server. */
export interface TenantLimit {
  readonly tenant: string;
  /** At most this many of the tenant's jobs leased at once; `null` for no bound. */
  readonly concurrency: number | null;
  /** At most `rate.count` leases per `rate.periodMs` (token bucket, burst = count); `null` for no bound. */
  readonly rate: Rate | null;
  /** Its share of the fair order's turns, 1-1,000 (default 1). */
  readonly weight: number;
  /** When it was set (µs since the epoch). */
  readonly setAt: Micros;
  /** Who set it: a token's subject, `config` (seeded from `[tenants]`), or `local`. */
  readonly by: string;
}

/** A limit with its tenant now: jobs leased, and whole tokens left (`null` without a rate). */
export interface TenantLimitStatus extends TenantLimit {
  readonly leased: number;
  readonly tokens: number | null;
}

/**
 * Check a limit's fields; `invalid_argument` naming the field: a bad tenant, a concurrency that
 * is not a whole number in 1-1,000,000, a rate outside `parseRate`'s bounds, a weight that is not
 * a whole number in 1-1,000, or a limit that changes nothing (no concurrency, no rate, weight 1).
 */
export function checkTenantLimit(limit: TenantLimit): TenantLimit {
  const tenant = checkTenant(limit.tenant);
  const { concurrency, weight } = limit;
  checkConcurrency(concurrency);
  if (typeof weight !== 'number' || !Number.isInteger(weight) || weight < 1 || weight > MAX_TENANT_WEIGHT) {
    throw invalidArgument('weight', `must be a whole number from 1 to ${MAX_TENANT_WEIGHT}`);
  }
  const rate = checkLimitRate(limit.rate);
  if (concurrency === null && rate === null && weight === DEFAULT_TENANT_WEIGHT) {
    throw invalidArgument('concurrency', 'set a concurrency, a rate or a weight other than 1 (or clear the limit)');
  }
  return {
    ...limit,
    tenant,
    concurrency,
    weight,
    rate: rate === null ? null : { count: rate.count, periodMs: rate.periodMs },
  };
}

/**
 * Check a limit to store against those held: an existing tenant's is replaced; a new one past
 * `maxTotal` is refused `failed_precondition`. Pure, so every store refuses the same way.
 */
export function admitTenantLimit(held: readonly TenantLimit[], limit: TenantLimit, maxTotal: number): void {
  admitLimit(
    held.some((l) => l.tenant === limit.tenant),
    held.length,
    maxTotal,
    'tenant limits',
    'MAX_TENANT_LIMITS',
  );
}

/** The order tenant limits list in on every backend: by tenant, as JavaScript compares strings. */
export function compareTenantLimits(a: TenantLimit, b: TenantLimit): number {
  return a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : 0;
}

/** A limit as a listing shows it. */
export function tenantLimitStatus(
  limit: TenantLimit,
  leased: number,
  bucket: TokenBucket | null,
  now: Micros,
): TenantLimitStatus {
  return { ...limit, leased, tokens: tokensNow(limit.rate, bucket, now) };
}

/**
 * The limits `[tenants."<name>"]` tables set, as the server stores them at start, `by: 'config'`,
 * each replacing its tenant's limit.
 */
export function configTenantLimits(
  tenants: Readonly<
    Record<
      string,
      {
        readonly concurrency?: number | undefined;
        readonly rate?: string | undefined;
        readonly weight?: number | undefined;
      }
    >
  >,
  now: Micros,
): TenantLimit[] {
  const limits: TenantLimit[] = [];
  for (const [tenant, entry] of Object.entries(tenants)) {
    limits.push(
      checkTenantLimit({
        tenant,
        concurrency: entry.concurrency ?? null,
        rate: entry.rate === undefined ? null : parseRate(entry.rate, `tenants.${tenant}.rate`),
        weight: entry.weight ?? DEFAULT_TENANT_WEIGHT,
        setAt: now,
        by: 'config',
      }),
    );
  }
  return limits.sort(compareTenantLimits);
}

/**
 * One claim's room per limited tenant, taken job by job, and each tenant's weight. Built at the
 * start of a claim from the limits, each tenant's leased count and its bucket. Tenants are known
 * by `keyOf` (the name by default; a store that sees only scopes keys them by scope).
 */
export class TenantBudget {
  private readonly limits: ReadonlyMap<string, TenantLimit>;
  private readonly room = new Map<string, number>();
  private readonly takenByTenant = new Map<string, number>();

  constructor(
    limits: Iterable<TenantLimit>,
    leased: (tenant: string) => number,
    buckets: (tenant: string) => TokenBucket | null,
    now: Micros,
    keyOf: (limit: TenantLimit) => string = (limit) => limit.tenant,
  ) {
    this.limits = new Map([...limits].map((l) => [keyOf(l), l]));
    for (const [key, limit] of this.limits) this.room.set(key, laneRoom(limit, leased(key), buckets(key), now));
  }

  /** Whether no tenant is limited: a claim runs as it did before tenant limits. */
  get unlimited(): boolean {
    return this.limits.size === 0;
  }

  /** A tenant's weight (1 without a limit); system jobs (`null`) have none. */
  weight(tenant: string): number {
    return this.limits.get(tenant)?.weight ?? DEFAULT_TENANT_WEIGHT;
  }

  /** Whether a job of `tenant` may be taken now (system jobs always). */
  hasRoom(tenant: string | null): boolean {
    if (tenant === null) return true;
    const room = this.room.get(tenant);
    return room === undefined || room > 0;
  }

  /** Count a job of `tenant` taken (the caller checked `hasRoom`). */
  take(tenant: string | null): void {
    if (tenant === null) return;
    const room = this.room.get(tenant);
    if (room === undefined) return;
    this.room.set(tenant, room - 1);
    this.takenByTenant.set(tenant, (this.takenByTenant.get(tenant) ?? 0) + 1);
  }

  /** Jobs taken per limited tenant so far. */
  get taken(): ReadonlyMap<string, number> {
    return this.takenByTenant;
  }

  /** Each rate-limited tenant's bucket after this claim: refilled to `now`, `taken` tokens spent. */
  spent(buckets: (tenant: string) => TokenBucket | null, now: Micros): Map<string, TokenBucket> {
    return spendBuckets(this.takenByTenant, (key) => this.limits.get(key)?.rate ?? null, buckets, now);
  }
}

/**
 * Smooth weighted round robin over tenants (the nginx upstream scheme): each turn every tenant
 * that can be served gains its weight in credit, the one with the most credit (the first in
 * scope order on a tie) is served and pays the turn's total weight. Over any run of turns where
 * the same tenants stay servable, each gets its weight's share to within one turn. A tenant that
 * cannot be served (no work, or no room) loses its credit, so idleness is not banked. The credits
 * belong to the store instance, as the round-robin cursor does.
 */
export class WeightedTurns {
  private credits = new Map<string, number>();

  /** The tenant to serve from `servable` (keys in scope order, with their weights). */
  next(servable: ReadonlyMap<string, number>): string | undefined {
    let total = 0;
    let best: string | undefined;
    let bestCredit = -Infinity;
    const credits = new Map<string, number>();
    for (const [key, weight] of servable) {
      const credit = (this.credits.get(key) ?? 0) + weight;
      credits.set(key, credit);
      total += weight;
      if (credit > bestCredit) {
        best = key;
        bestCredit = credit;
      }
    }
    if (best !== undefined) credits.set(best, bestCredit - total);
    this.credits = credits;
    return best;
  }
}

/** What {@link pickForTenants} needs of a ready job. */
export interface TenantCandidate {
  /** The job's scope as a string that orders as its bytes do (the system scope sorts first). */
  readonly scope: string;
  /** The key of its tenant in the {@link TenantBudget}; `null` for a system job. */
  readonly tenant: string | null;
  readonly kind: string;
}

/**
 * Up to `limit` of `ready` (ready jobs in key order: every ready job, or at least the first
 * `limit` of each tenant with room) that both the lanes and the tenants have room for. Fair: system
 * jobs first in key order, then tenants by `turns`; otherwise key order. Takes from both budgets.
 */
export function pickForTenants<T extends TenantCandidate>(
  ready: readonly T[],
  limit: number,
  fair: boolean,
  lanes: LaneBudget,
  tenants: TenantBudget,
  turns: WeightedTurns,
): T[] {
  const chosen: T[] = [];
  const admit = (job: T): boolean => {
    if (!tenants.hasRoom(job.tenant) || !lanes.take(job.kind)) return false;
    tenants.take(job.tenant);
    return true;
  };
  if (!fair) {
    for (const job of ready) {
      if (chosen.length >= limit) break;
      if (admit(job)) chosen.push(job);
    }
    return chosen;
  }
  const queues = new Map<string, T[]>();
  for (const job of ready) {
    if (job.tenant === null) {
      if (chosen.length < limit && admit(job)) chosen.push(job);
      continue;
    }
    let queue = queues.get(job.scope);
    if (queue === undefined) queues.set(job.scope, (queue = []));
    queue.push(job);
  }
  const scopes = [...queues.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  while (chosen.length < limit) {
    // The servable tenants: room left, and a first job whose lane has room (a lane's room only
    // shrinks within a claim, so a job passed over here stays passed over).
    const servable = new Map<string, number>();
    for (const scope of scopes) {
      const queue = queues.get(scope) as T[];
      while (queue.length > 0 && !lanes.hasRoom((queue[0] as T).kind)) queue.shift();
      const head = queue[0];
      if (head === undefined || !tenants.hasRoom(head.tenant)) continue;
      servable.set(scope, tenants.weight(head.tenant as string));
    }
    const scope = turns.next(servable);
    if (scope === undefined) break;
    const job = (queues.get(scope) as T[]).shift() as T;
    admit(job);
    chosen.push(job);
  }
  return chosen;
}
