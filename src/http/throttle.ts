/**
 * Failed dashboard logins, throttled per client address: a token bucket per
 * address that each failure takes one from and time refills. An empty bucket
 * refuses the address's next login before its token is even looked at (a
 * right token included, or the answer would tell a guesser it had found
 * one), with the seconds until the bucket holds one again. Logins that
 * succeed take nothing. One tenant tried 300 wrong tokens at 251-762 a
 * second before; now it gets `burst` tries, then `perMinute` a minute.
 *
 * The table is bounded: past `maxAddresses`, addresses whose buckets have
 * refilled are dropped first, then the one whose last failure is oldest. An
 * IPv6 client is counted by its /64 (one host usually holds a whole /64), an
 * IPv4-mapped address by its IPv4 address. Behind a reverse proxy every
 * client shares the proxy's address: the listener trusts no forwarded header.
 */

export interface ThrottleLimits {
  /** Failed logins one address may make at once. */
  readonly burst: number;
  /** Failed logins one address may make a minute, once its burst is spent. */
  readonly perMinute: number;
  /** Addresses remembered at most. */
  readonly maxAddresses: number;
}

/** Addresses the login throttle remembers at most: a few hundred KiB. */
export const MAX_THROTTLED_ADDRESSES = 10_000;

interface Bucket {
  tokens: number;
  /** ms, when `tokens` was last brought up to date. */
  at: number;
}

export class LoginThrottle {
  // A Map keeps insertion order; a failure re-inserts its address, so the first entry failed longest ago.
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;

  constructor(
    private readonly limits: ThrottleLimits,
    private readonly nowMs: () => number,
  ) {
    this.perMs = limits.perMinute / 60_000;
  }

  /** `null` when `address` may try to log in now; else the whole seconds until it may. */
  retryAfterSecs(address: string): number | null {
    const bucket = this.buckets.get(addressKey(address));
    if (bucket === undefined) return null;
    const tokens = this.refilled(bucket);
    return tokens >= 1 ? null : Math.max(1, Math.ceil((1 - tokens) / this.perMs / 1000));
  }

  /** A login from `address` failed: it takes one from the address's bucket. */
  failed(address: string): void {
    const key = addressKey(address);
    const bucket = this.buckets.get(key);
    const tokens = bucket === undefined ? this.limits.burst : this.refilled(bucket);
    this.buckets.delete(key);
    if (this.buckets.size >= this.limits.maxAddresses) this.makeRoom();
    this.buckets.set(key, { tokens: tokens - 1, at: this.nowMs() });
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.buckets.size;
  }

  private refilled(bucket: Bucket): number {
    return Math.min(this.limits.burst, bucket.tokens + (this.nowMs() - bucket.at) * this.perMs);
  }

  private makeRoom(): void {
    // The oldest failures come first, and theirs are the buckets most likely refilled.
    for (const [key, bucket] of this.buckets) {
      if (this.buckets.size < this.limits.maxAddresses) return;
      if (this.refilled(bucket) < this.limits.burst) break;
      this.buckets.delete(key);
    }
    const oldest = this.buckets.keys().next();
    if (this.buckets.size >= this.limits.maxAddresses && oldest.done !== true) this.buckets.delete(oldest.value);
  }
}

/** What a client address is counted as: an IPv4 address, or an IPv6 /64. */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1] !== undefined) return mapped[1];
  if (!address.includes(':')) return address;
  const bare = address.split('%')[0] ?? address;
  const [head = '', tail] = bare.split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0');
  const groups = [...front, ...zeros, ...back].slice(0, 4).map((group) => parseInt(group, 16).toString(16));
  return `${groups.join(':')}::/64`;
}
