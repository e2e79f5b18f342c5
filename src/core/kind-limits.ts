/**
 * Kind limits: at most `concurrency` jobs of a kind prefix leased at once, and at most
 * `rate.count` leases per `rate.periodMs` (a token bucket), across every scope, tenant and
 * server. A job's lane is the longest limit prefix that covers its kind (`leaseKindMatches`, so a
 * `system:` kind only by a `system:` prefix); a job in no lane is unlimited.
 *
 * The claim rule, the same on every backend: the claim walks ready jobs in its usual order (key
 * order, or the fleet's fair order, `core/fair-order.ts`) and takes a job of a lane while the lane
 * has room: `concurrency - leased - taken so far in this claim > 0`, and at least one whole token
 * left. A lane without room holds its jobs back for the rest of the claim; the order of every
 * other job is unchanged. Leased jobs beyond a lowered limit finish normally; they only hold the
 * lane full until enough of them leave it.
 *
 * This module is the plain reference of that rule ({@link LaneBudget}, {@link pickWithinLimits});
 * the in-memory store and the model test use it as written, the RocksDB live index applies it by
 * skipping a full lane's kind trees, and PostgreSQL in its claim statement.
 */
import { ErrorCode, invalidArgument, TelhaError } from './errors.ts';
import { MAX_KIND_BYTES, MAX_KIND_LIMITS, MAX_LIMIT_CONCURRENCY, MAX_TIMER_MS, SYSTEM_KIND_PREFIX } from './bounds.ts';
import { MAX_RATE_COUNT, parseRate, type Rate } from './rate.ts';
import { leaseKindMatches } from './transitions.ts';
import type { Micros } from './types.ts';
import { checkToken } from './validate.ts';

export { MAX_KIND_LIMITS };

/** A limit on the jobs of a kind prefix, global: every scope, every tenant, every server. */
export interface KindLimit {
  /** A token like a kind; `system:` kinds only by a `system:` prefix (`leaseKindMatches`). */
  readonly kindPrefix: string;
  /** At most this many leased at once, across every scope and server; `null` for no bound. */
  readonly concurrency: number | null;
  /** At most `rate.count` leases per `rate.periodMs` (token bucket, burst = count); `null` for no bound. */
  readonly rate: Rate | null;
  /** When it was set (µs since the epoch). */
  readonly setAt: Micros;
  /** Who set it: a token's subject, `config` (seeded from `[jobs.kinds]`), or `local`. */
  readonly by: string;
}

/** A limit with its lane now: jobs leased, and whole tokens left (`null` without a rate). */
export interface KindLimitStatus extends KindLimit {
  /** Jobs of its lane leased now (on RocksDB, also those a claim is writing). */
  readonly leased: number;
  /** Whole tokens in its bucket now; `null` without a rate. */
  readonly tokens: number | null;
}

/**
 * A lane's token bucket. Tokens refill continuously, `rate.count` per `rate.periodMs`, up to
 * `rate.count` (the burst); a lease spends one whole token. Fractions accumulate.
 */
export interface TokenBucket {
  readonly tokens: number;
  readonly refilledAt: Micros;
}

/** Token arithmetic is in doubles: a sum that should be whole may land a hair below it. */
const EPSILON = 1e-9;

/** Whole tokens in a bucket. */
export function wholeTokens(bucket: TokenBucket): number {
  return Math.floor(bucket.tokens + EPSILON);
}

/** The lane of a kind: the longest limit prefix that covers it, or null (unlimited). */
export function limitLane(limits: Iterable<KindLimit>, kind: string): string | null {
  let lane: string | null = null;
  for (const limit of limits) {
    if ((lane === null || limit.kindPrefix.length > lane.length) && leaseKindMatches(kind, [limit.kindPrefix])) {
      lane = limit.kindPrefix;
    }
  }
  return lane;
}

/** The bucket refilled to `now`; `null` (a lane never drawn from, or a store just opened) is full. */
export function refillBucket(bucket: TokenBucket | null, rate: Rate, now: Micros): TokenBucket {
  if (bucket === null) return { tokens: rate.count, refilledAt: now };
  if (now <= bucket.refilledAt) return { tokens: Math.min(bucket.tokens, rate.count), refilledAt: bucket.refilledAt };
  const gained = ((now - bucket.refilledAt) * rate.count) / (rate.periodMs * 1000);
  return { tokens: Math.min(rate.count, bucket.tokens + gained), refilledAt: now };
}

/** Spend up to `n` whole tokens: how many were there to take, and the bucket after. */
export function takeTokens(bucket: TokenBucket, n: number): { taken: number; bucket: TokenBucket } {
  const taken = Math.max(0, Math.min(n, wholeTokens(bucket)));
  return { taken, bucket: { tokens: Math.max(0, bucket.tokens - taken), refilledAt: bucket.refilledAt } };
}

/** When the next whole token is there (the bucket refilled to `now` first); `null` when one is there now. */
export function nextTokenAt(bucket: TokenBucket, rate: Rate, now: Micros): Micros | null {
  const current = refillBucket(bucket, rate, now);
  if (wholeTokens(current) >= 1) return null;
  const need = 1 - current.tokens;
  return current.refilledAt + Math.max(1, Math.ceil((need * rate.periodMs * 1000) / rate.count - EPSILON));
}

/** A kind prefix to limit: a token of 1-255 bytes, like a kind. */
export function checkLimitPrefix(prefix: unknown, field = 'kind_prefix'): string {
  return checkToken(field, prefix, MAX_KIND_BYTES);
}

/**
 * Check a limit's fields; `invalid_argument` naming the field: an empty or over-long prefix, a
 * concurrency that is not a whole number in 1-1,000,000, a rate outside `parseRate`'s bounds, or
 * neither a concurrency nor a rate (clear the limit instead).
 */
export function checkKindLimit(limit: KindLimit): KindLimit {
  const kindPrefix = checkLimitPrefix(limit.kindPrefix);
  const { concurrency, rate } = limit;
  checkConcurrency(concurrency);
  if (rate !== null) checkRate(rate);
  if (concurrency === null && rate === null) {
    throw invalidArgument('concurrency', 'set a concurrency or a rate (or clear the limit)');
  }
  return {
    ...limit,
    kindPrefix,
    concurrency,
    rate: rate === null ? null : { count: rate.count, periodMs: rate.periodMs },
  };
}

/** A limit's concurrency: `null`, or a whole number in 1-1,000,000 (`invalid_argument` naming `concurrency`). */
export function checkConcurrency(concurrency: number | null): void {
  if (
    concurrency !== null &&
    (typeof concurrency !== 'number' ||
      !Number.isInteger(concurrency) ||
      concurrency < 1 ||
      concurrency > MAX_LIMIT_CONCURRENCY)
  ) {
    throw invalidArgument('concurrency', `must be a whole number from 1 to ${MAX_LIMIT_CONCURRENCY}`);
  }
}

/** A rate as text (`"100/s"`, parsed) or as numbers (checked against the same bounds). */
export function checkLimitRate(rate: Rate | string | null | undefined, field = 'rate'): Rate | null {
  if (rate === null || rate === undefined) return null;
  if (typeof rate === 'string') return parseRate(rate, field);
  return checkRate(rate, field);
}

function checkRate(rate: Rate, field = 'rate'): Rate {
  const { count, periodMs } = rate;
  if (!Number.isInteger(count) || count < 1 || count > MAX_RATE_COUNT) {
    throw invalidArgument(field, `the count must be a whole number from 1 to ${MAX_RATE_COUNT}`);
  }
  if (!Number.isInteger(periodMs) || periodMs < 1 || periodMs > MAX_TIMER_MS) {
    throw invalidArgument(field, `the period must be a whole number of milliseconds from 1 to ${MAX_TIMER_MS}`);
  }
  return rate;
}

/**
 * Check a limit to store against the limits held: an existing prefix is replaced; a new one past
 * `maxTotal` is refused `failed_precondition` (not `resource_exhausted`, which clients retry).
 * Pure, so every store refuses the same way, before writing anything.
 */
export function admitKindLimit(held: readonly KindLimit[], limit: KindLimit, maxTotal: number): void {
  admitLimit(
    held.some((l) => l.kindPrefix === limit.kindPrefix),
    held.length,
    maxTotal,
    'kind limits',
    'MAX_KIND_LIMITS',
  );
}

/** Refuse a new limit past `maxTotal` (`failed_precondition`); a replaced one (`exists`) always passes. */
export function admitLimit(exists: boolean, held: number, maxTotal: number, what: string, bound: string): void {
  if (exists || held < maxTotal) return;
  throw new TelhaError(
    ErrorCode.FailedPrecondition,
    `the store already holds ${maxTotal} ${what}, the most it may (${bound}); clear one first`,
  );
}

/** The order limits list in on every backend: by prefix, as JavaScript compares strings. */
export function compareKindLimits(a: KindLimit, b: KindLimit): number {
  return a.kindPrefix < b.kindPrefix ? -1 : a.kindPrefix > b.kindPrefix ? 1 : 0;
}

/** A limit as a listing shows it: with its lane's leased count and whole tokens now. */
export function limitStatus(
  limit: KindLimit,
  leased: number,
  bucket: TokenBucket | null,
  now: Micros,
): KindLimitStatus {
  return { ...limit, leased, tokens: tokensNow(limit.rate, bucket, now) };
}

/** Whole tokens in a bucket refilled to `now`; `null` without a rate. */
export function tokensNow(rate: Rate | null, bucket: TokenBucket | null, now: Micros): number | null {
  return rate === null ? null : wholeTokens(refillBucket(bucket, rate, now));
}

/** A lane's room at the start of a claim: its concurrency less its leased jobs, and its whole tokens. */
export function laneRoom(
  limit: Pick<KindLimit, 'concurrency' | 'rate'>,
  leased: number,
  bucket: TokenBucket | null,
  now: Micros,
): number {
  const room = limit.concurrency === null ? Infinity : Math.max(0, limit.concurrency - leased);
  return limit.rate === null ? room : Math.min(room, wholeTokens(refillBucket(bucket, limit.rate, now)));
}

/**
 * When a lane's ready jobs can next be leased for want of a token: its next token, for a
 * rate-limited lane that is not full and has no whole token now; otherwise `null` (a waiter
 * sleeps until the earliest of these and the gates).
 */
export function laneTokenDue(
  limit: Pick<KindLimit, 'concurrency' | 'rate'>,
  leased: number,
  bucket: TokenBucket | null,
  now: Micros,
): Micros | null {
  if (limit.rate === null || (limit.concurrency !== null && leased >= limit.concurrency)) return null;
  return nextTokenAt(bucket ?? refillBucket(null, limit.rate, now), limit.rate, now);
}

/**
 * One claim's room in each lane, taken job by job: the claim rule as code. Built at the start of
 * a claim from the limits, each lane's leased count and its bucket; the lane of each kind is
 * worked out once. `take` is what a claim calls for each job it is about to lease.
 */
export class LaneBudget {
  private readonly limits: ReadonlyMap<string, KindLimit>;
  private readonly room = new Map<string, number>();
  private readonly takenByLane = new Map<string, number>();
  private readonly laneByKind = new Map<string, string | null>();

  constructor(
    limits: Iterable<KindLimit>,
    leased: (kindPrefix: string) => number,
    buckets: (kindPrefix: string) => TokenBucket | null,
    now: Micros,
  ) {
    this.limits = new Map([...limits].map((l) => [l.kindPrefix, l]));
    for (const limit of this.limits.values()) {
      this.room.set(limit.kindPrefix, laneRoom(limit, leased(limit.kindPrefix), buckets(limit.kindPrefix), now));
    }
  }

  /** Whether no lane is limited: a claim can skip the bookkeeping. */
  get unlimited(): boolean {
    return this.limits.size === 0;
  }

  /** The lane of `kind` (`limitLane`), remembered. */
  laneOf(kind: string): string | null {
    let lane = this.laneByKind.get(kind);
    if (lane === undefined) {
      lane = limitLane(this.limits.values(), kind);
      this.laneByKind.set(kind, lane);
    }
    return lane;
  }

  /** Whether a job of `kind` may be taken now. */
  hasRoom(kind: string): boolean {
    if (this.limits.size === 0) return true;
    const lane = this.laneOf(kind);
    return lane === null || (this.room.get(lane) ?? 0) > 0;
  }

  /** Take a job of `kind` if its lane has room; whether it was taken. */
  take(kind: string): boolean {
    if (this.limits.size === 0) return true;
    const lane = this.laneOf(kind);
    if (lane === null) return true;
    const room = this.room.get(lane) ?? 0;
    if (room <= 0) return false;
    this.room.set(lane, room - 1);
    this.takenByLane.set(lane, (this.takenByLane.get(lane) ?? 0) + 1);
    return true;
  }

  /** Jobs taken per lane so far. */
  get taken(): ReadonlyMap<string, number> {
    return this.takenByLane;
  }

  /**
   * Each rate-limited lane's bucket after this claim: refilled to `now` and `taken` tokens spent.
   * Lanes the claim took nothing from are left out (their buckets need no write).
   */
  spent(buckets: (kindPrefix: string) => TokenBucket | null, now: Micros): Map<string, TokenBucket> {
    return spendBuckets(this.takenByLane, (lane) => this.limits.get(lane)?.rate ?? null, buckets, now);
  }
}

/** Each rate-limited key's bucket after `taken` leases: refilled to `now` and that many tokens spent. */
export function spendBuckets(
  taken: ReadonlyMap<string, number>,
  rateOf: (key: string) => Rate | null,
  buckets: (key: string) => TokenBucket | null,
  now: Micros,
): Map<string, TokenBucket> {
  const after = new Map<string, TokenBucket>();
  for (const [key, n] of taken) {
    const rate = rateOf(key);
    if (rate === null || n === 0) continue;
    after.set(key, takeTokens(refillBucket(buckets(key), rate, now), n).bucket);
  }
  return after;
}

/** Up to `limit` of `ordered` (ready jobs in claim order) that the lanes have room for, in that order. */
export function pickWithinLimits<T extends { readonly kind: string }>(
  ordered: Iterable<T>,
  limit: number,
  budget: LaneBudget,
): T[] {
  const chosen: T[] = [];
  for (const job of ordered) {
    if (chosen.length >= limit) break;
    if (budget.take(job.kind)) chosen.push(job);
  }
  return chosen;
}

/**
 * The limits `[jobs.kinds."<prefix>"]` tables set (those with a `concurrency` or a `rate`), as the
 * server stores them at start, `by: 'config'`, each replacing its prefix's limit.
 */
export function configKindLimits(
  kinds: Readonly<Record<string, { readonly concurrency?: number | undefined; readonly rate?: string | undefined }>>,
  now: Micros,
): KindLimit[] {
  const limits: KindLimit[] = [];
  for (const [kindPrefix, entry] of Object.entries(kinds)) {
    if (entry.concurrency === undefined && entry.rate === undefined) continue;
    limits.push(
      checkKindLimit({
        kindPrefix,
        concurrency: entry.concurrency ?? null,
        rate: entry.rate === undefined ? null : parseRate(entry.rate, `jobs.kinds.${kindPrefix}.rate`),
        setAt: now,
        by: 'config',
      }),
    );
  }
  return limits.sort(compareKindLimits);
}

/**
 * Whether a lease filter (`null`: every kind but `system:` ones) may take jobs of a lane: some
 * wanted prefix and the lane's prefix overlap. Lease waiters with such a filter are woken when
 * the lane frees.
 */
export function laneMayServe(kindPrefix: string, kinds: readonly string[] | null): boolean {
  const system = kindPrefix.startsWith(SYSTEM_KIND_PREFIX);
  if (kinds === null) return !system;
  return kinds.some(
    (k) => (k.startsWith(kindPrefix) || kindPrefix.startsWith(k)) && (!system || k.startsWith(SYSTEM_KIND_PREFIX)),
  );
}
