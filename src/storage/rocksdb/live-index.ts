/**
 * The in-memory index of live jobs (Pending and Leased) that sits in front of
 * the RocksDB store, rebuilt at open by a prefix scan of each scope's Pending
 * and Leased ranges.
 *
 * Why it exists: ready work could be found by scanning `[scope][Pending]`
 * and skipping gated rows, but that scan gets slower with every backoff-gated row ahead
 * of the first eligible one, and with every tombstone the LSM keeps in the
 * Pending range after jobs leave it. Here:
 *  - ready jobs sit in one B-tree per kind, ordered by the full job key, so the
 *    next job is the minimum over the kinds the caller asked for: O(kinds · log n);
 *  - gated jobs sit in a B-tree ordered by `not_before` and are promoted when
 *    their gate opens, so they are never scanned past;
 *  - leased jobs sit in a B-tree ordered by deadline, so a reaper pass touches
 *    only expired leases, whatever else the store holds.
 *  - paused work (`core/pauses.ts`) is jumped over, not stepped over: a kind tree paused
 *    everywhere is not looked at, and a scope paused for a kind tree is skipped by one seek
 *    past that scope's whole key range, so a claim costs O(paused scopes · log n) at worst,
 *    whatever number of jobs the pauses hold back.
 *  - kind limits (`core/kind-limits.ts`) are applied the same way: the index counts leased jobs
 *    per lane and keeps each rate-limited lane's token bucket; a claim skips every kind tree of a
 *    lane without room, so a full lane's backlog costs nothing however long it is.
 *  - tenant limits (`core/tenant-limits.ts`), while any exists: the index counts leased jobs of
 *    each limited scope and keeps their buckets; a claim reads at most `limit` ready jobs of each
 *    tenant with room and lets `pickForTenants` choose, so a full tenant's backlog is not read.
 * Completed and Dead jobs cost nothing here. Memory is about 300 bytes per live job.
 * Keys are latin1 strings of the key bytes: their JS order is the byte order.
 */
import sortedBtree from 'sorted-btree';
import {
  laneTokenDue,
  LaneBudget,
  limitLane,
  limitStatus,
  type KindLimit,
  type KindLimitStatus,
  type TokenBucket,
} from '../../core/kind-limits.ts';
import {
  pickForTenants,
  TenantBudget,
  tenantLimitStatus,
  WeightedTurns,
  type TenantLimit,
  type TenantLimitStatus,
} from '../../core/tenant-limits.ts';
import { leaseKindMatches, leasesSystemKinds } from '../../core/transitions.ts';
import type { Micros } from '../../core/types.ts';

// sorted-btree is CommonJS with `exports.default`; under Node's ESM interop the class is `.default`.
const BTreeClass = sortedBtree.default;
type BTree<K, V> = InstanceType<typeof BTreeClass<K, V>>;

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function newTree<V>(): BTree<string, V> {
  return new BTreeClass<string, V>(undefined, compareStrings);
}

/** 8 big-endian bytes as a latin1 string, so time-ordered tree keys compare correctly. */
function timeKey(at: Micros): string {
  const buf = Buffer.allocUnsafe(8);
  buf.writeUInt32BE(Math.floor(at / 0x1_0000_0000), 0);
  buf.writeUInt32BE(at % 0x1_0000_0000, 4);
  return buf.toString('latin1');
}

export interface PendingEntry {
  readonly jobId: string;
  /** The job key as a latin1 string; its first 32 characters are the scope. */
  readonly key: string;
  readonly kind: string;
  readonly notBefore: Micros | null;
}

export interface LeasedEntry {
  readonly jobId: string;
  readonly key: string;
  readonly kind: string;
  readonly deadline: Micros;
}

/** A scope as the latin1 string of its 32 bytes, or `null` for every scope. */
export type ScopePrefix = string | null;

const SCOPE_CHARS = 32;
/** The system scope's prefix: 32 zero bytes, ahead of every tenant. */
const SYSTEM_SCOPE_PREFIX = '\u0000'.repeat(SCOPE_CHARS);
/** Appended to a scope prefix, sorts after every job key of that scope (58 characters in all). */
const PAST_SCOPE = '\u00ff'.repeat(27);

/** A pause as the index applies it: the scope's latin1 prefix (`null`: everywhere) and the kind prefix. */
export interface IndexPause {
  readonly scope: ScopePrefix;
  readonly kindPrefix: string;
}

/** What the pauses hold back of one kind tree: all of it, or the jobs of some scopes. */
interface KindPauses {
  readonly everywhere: boolean;
  readonly scopes: ReadonlySet<string>;
}

const UNPAUSED: KindPauses = Object.freeze({ everywhere: false, scopes: new Set<string>() });

export class LiveIndex {
  private pauses: readonly IndexPause[] = [];
  /** Each kind tree's `KindPauses`, worked out once per change of the pauses (at most one per kind tree). */
  private readonly pausedByKind = new Map<string, KindPauses>();
  private readonly readyByKind = new Map<string, BTree<string, PendingEntry>>();
  private readonly gated = newTree<PendingEntry>();
  private readonly pendingById = new Map<string, { entry: PendingEntry; gateKey: string | null }>();
  private readonly leasedByDeadline = newTree<string>();
  private readonly leasedById = new Map<string, { entry: LeasedEntry; deadlineKey: string }>();
  /** Kind limits by prefix (at most `MAX_KIND_LIMITS`). */
  private limits = new Map<string, KindLimit>();
  /** Each kind's lane (`limitLane`), worked out once per change of the limits. */
  private readonly laneByKind = new Map<string, string | null>();
  /** Jobs leased, or taken by a claim still writing them, per kind and per lane. */
  private readonly leasedByKind = new Map<string, number>();
  private readonly leasedByLane = new Map<string, number>();
  /** Token buckets of rate-limited lanes; absent is full (a reopened store starts full). */
  private readonly buckets = new Map<string, TokenBucket>();
  /** Tenant limits by scope (latin1), the leased count and bucket of each, and the weighted order's credits. */
  private tenantLimits = new Map<string, TenantLimit>();
  private scopeByTenant = new Map<string, string>();
  private readonly leasedByScope = new Map<string, number>();
  private readonly tenantBuckets = new Map<string, TokenBucket>();
  private readonly turns = new WeightedTurns();

  get pendingCount(): number {
    return this.pendingById.size;
  }

  get leasedCount(): number {
    return this.leasedById.size;
  }

  /**
   * The earliest `created_at` among Pending jobs, ready or gated; `null` when none.
   * A walk of every Pending entry, whose cost grows with the backlog, so metrics call it
   * once per refresh, never per scrape.
   */
  oldestPendingCreatedAt(): Micros | null {
    let oldest: string | null = null;
    for (const { entry } of this.pendingById.values()) {
      // The key is [scope 32][state 1][priority 1][created_at 8][job_id 16]; big-endian, so string order is time order.
      const createdAt = entry.key.slice(34, 42);
      if (oldest === null || createdAt < oldest) oldest = createdAt;
    }
    if (oldest === null) return null;
    const bytes = Buffer.from(oldest, 'latin1');
    return bytes.readUInt32BE(0) * 0x1_0000_0000 + bytes.readUInt32BE(4);
  }

  /** Replace the pauses claims skip (the store's whole list: pauses change rarely, claims often). */
  setPauses(pauses: readonly IndexPause[]): void {
    this.pauses = [...pauses];
    this.pausedByKind.clear();
  }

  /**
   * Replace the kind limits claims honour. Leased counts are regrouped by the new lanes; a lane
   * that keeps its rate keeps its bucket (its tokens capped at the new burst when it refills).
   */
  setLimits(limits: readonly KindLimit[]): void {
    this.limits = new Map(limits.map((l) => [l.kindPrefix, l]));
    this.laneByKind.clear();
    this.leasedByLane.clear();
    for (const [kind, n] of this.leasedByKind) {
      const lane = this.laneOf(kind);
      if (lane !== null) this.leasedByLane.set(lane, (this.leasedByLane.get(lane) ?? 0) + n);
    }
    for (const lane of [...this.buckets.keys()])
      if ((this.limits.get(lane)?.rate ?? null) === null) this.buckets.delete(lane);
  }

  /**
   * Replace the tenant limits claims honour, `scopes` giving each tenant's scope (latin1). Leased
   * jobs of limited scopes are counted again (a walk of the leased jobs, once per change).
   */
  setTenantLimits(limits: readonly TenantLimit[], scopeOf: (tenant: string) => string): void {
    this.scopeByTenant = new Map(limits.map((l) => [l.tenant, scopeOf(l.tenant)]));
    this.tenantLimits = new Map(limits.map((l) => [this.scopeByTenant.get(l.tenant) as string, l]));
    this.leasedByScope.clear();
    for (const { entry } of this.leasedById.values()) this.countScope(entry.key, +1);
    for (const scope of [...this.tenantBuckets.keys()])
      if ((this.tenantLimits.get(scope)?.rate ?? null) === null) this.tenantBuckets.delete(scope);
  }

  /** Every tenant limit with its leased count and whole tokens at `now`, in the order given. */
  tenantStatuses(limits: readonly TenantLimit[], now: Micros): TenantLimitStatus[] {
    return limits.map((l) => {
      const scope = this.scopeByTenant.get(l.tenant) ?? '';
      return tenantLimitStatus(l, this.leasedByScope.get(scope) ?? 0, this.tenantBuckets.get(scope) ?? null, now);
    });
  }

  private countScope(key: string, delta: number): void {
    if (this.tenantLimits.size === 0) return;
    const scope = key.slice(0, SCOPE_CHARS);
    if (!this.tenantLimits.has(scope)) return;
    const n = (this.leasedByScope.get(scope) ?? 0) + delta;
    if (n <= 0) this.leasedByScope.delete(scope);
    else this.leasedByScope.set(scope, n);
  }

  /** Every limit with its lane's leased count and whole tokens at `now`, in the order given. */
  limitStatuses(limits: readonly KindLimit[], now: Micros): KindLimitStatus[] {
    return limits.map((l) =>
      limitStatus(l, this.leasedByLane.get(l.kindPrefix) ?? 0, this.buckets.get(l.kindPrefix) ?? null, now),
    );
  }

  private laneOf(kind: string): string | null {
    if (this.limits.size === 0) return null;
    let lane = this.laneByKind.get(kind);
    if (lane === undefined) {
      lane = limitLane(this.limits.values(), kind);
      this.laneByKind.set(kind, lane);
    }
    return lane;
  }

  private countLeased(kind: string, delta: number): void {
    const n = (this.leasedByKind.get(kind) ?? 0) + delta;
    if (n <= 0) this.leasedByKind.delete(kind);
    else this.leasedByKind.set(kind, n);
    const lane = this.laneOf(kind);
    if (lane === null) return;
    const m = (this.leasedByLane.get(lane) ?? 0) + delta;
    if (m <= 0) this.leasedByLane.delete(lane);
    else this.leasedByLane.set(lane, m);
  }

  private budget(now: Micros): LaneBudget {
    return new LaneBudget(
      this.limits.values(),
      (lane) => this.leasedByLane.get(lane) ?? 0,
      (lane) => this.buckets.get(lane) ?? null,
      now,
    );
  }

  /** After a claim chose `taken`: spend their tokens, and count them leased until `settleClaim`. */
  private spend(budget: LaneBudget, taken: readonly PendingEntry[], now: Micros): void {
    if (!budget.unlimited) {
      for (const [lane, bucket] of budget.spent((l) => this.buckets.get(l) ?? null, now))
        this.buckets.set(lane, bucket);
    }
    for (const entry of taken) {
      this.countLeased(entry.kind, +1);
      this.countScope(entry.key, +1);
    }
  }

  /**
   * The end of a claim's write: its taken entries stop counting as leased (those it leased count
   * through `addLeased` now), and the token of each one it did not lease goes back to its lane.
   */
  settleClaim(taken: readonly PendingEntry[], leased: ReadonlySet<string>): void {
    for (const entry of taken) {
      this.countLeased(entry.kind, -1);
      this.countScope(entry.key, -1);
      if (leased.has(entry.jobId)) continue;
      const lane = this.laneOf(entry.kind);
      const rate = lane === null ? null : (this.limits.get(lane)?.rate ?? null);
      const bucket = lane === null ? undefined : this.buckets.get(lane);
      if (lane !== null && rate !== null && bucket !== undefined) {
        this.buckets.set(lane, { tokens: Math.min(rate.count, bucket.tokens + 1), refilledAt: bucket.refilledAt });
      }
    }
  }

  private kindPauses(kind: string): KindPauses {
    if (this.pauses.length === 0) return UNPAUSED;
    let found = this.pausedByKind.get(kind);
    if (found === undefined) {
      let everywhere = false;
      const scopes = new Set<string>();
      for (const pause of this.pauses) {
        if (!leaseKindMatches(kind, [pause.kindPrefix])) continue;
        if (pause.scope === null) everywhere = true;
        else scopes.add(pause.scope);
      }
      found = everywhere || scopes.size > 0 ? { everywhere, scopes } : UNPAUSED;
      this.pausedByKind.set(kind, found);
    }
    return found;
  }

  addPending(entry: PendingEntry, now: Micros): void {
    this.removePending(entry.jobId);
    if (entry.notBefore !== null && entry.notBefore > now) {
      const gateKey = timeKey(entry.notBefore) + entry.key;
      this.gated.set(gateKey, entry);
      this.pendingById.set(entry.jobId, { entry, gateKey });
    } else {
      this.readyTree(entry.kind).set(entry.key, entry);
      this.pendingById.set(entry.jobId, { entry, gateKey: null });
    }
  }

  removePending(jobId: string): void {
    const found = this.pendingById.get(jobId);
    if (found === undefined) return;
    this.pendingById.delete(jobId);
    if (found.gateKey !== null) {
      this.gated.delete(found.gateKey);
      return;
    }
    const tree = this.readyByKind.get(found.entry.kind);
    if (tree === undefined) return;
    tree.delete(found.entry.key);
    if (tree.size === 0) {
      this.readyByKind.delete(found.entry.kind);
      this.pausedByKind.delete(found.entry.kind);
    }
  }

  /** Move every gated job whose gate has opened by `now` into its ready tree. */
  promote(now: Micros): void {
    const horizon = timeKey(now + 1);
    for (;;) {
      const first = this.gated.minKey();
      if (first === undefined || first >= horizon) return;
      const entry = this.gated.get(first) as PendingEntry;
      this.gated.delete(first);
      this.readyTree(entry.kind).set(entry.key, entry);
      this.pendingById.set(entry.jobId, { entry, gateKey: null });
    }
  }

  /**
   * Remove and return up to `limit` ready jobs in key order, within a scope and
   * of kinds the lease filter takes (`leaseKindMatches`: no `system:` kind
   * unless asked for by name). The caller owns them until it adds them back.
   */
  takeReady(scope: ScopePrefix, kinds: readonly string[] | null, limit: number, now: Micros): PendingEntry[] {
    if (this.tenantLimits.size > 0) return this.takeForTenants(scope, kinds, limit, now, false);
    this.promote(now);
    const budget = this.budget(now);
    const taken = this.takeInOrder(scope, kinds, limit, now, budget);
    this.spend(budget, taken, now);
    return taken;
  }

  private takeInOrder(
    scope: ScopePrefix,
    kinds: readonly string[] | null,
    limit: number,
    now: Micros,
    budget: LaneBudget,
  ): PendingEntry[] {
    const taken: PendingEntry[] = [];
    while (taken.length < limit) {
      const next = this.peekReady(scope, kinds, budget);
      if (next === undefined) break;
      if (this.takeEntry(next, now)) {
        budget.take(next.kind);
        taken.push(next);
      }
    }
    return taken;
  }

  /**
   * Remove and return up to `limit` ready jobs across every scope in the fair order
   * (`core/fair-order.ts`): system jobs first, then one job per tenant in turn, starting with the
   * first tenant after `cursor`. Each step finds the next tenant with a jump per kind tree, so a
   * tenant with a million ready jobs costs the others nothing. Returns the new cursor.
   */
  takeReadyFair(
    kinds: readonly string[] | null,
    limit: number,
    now: Micros,
    cursor: string | null,
  ): { taken: PendingEntry[]; cursor: string | null } {
    if (this.tenantLimits.size > 0) return { taken: this.takeForTenants(null, kinds, limit, now, true), cursor };
    this.promote(now);
    const budget = this.budget(now);
    const taken = this.takeInOrder(SYSTEM_SCOPE_PREFIX, kinds, limit, now, budget);
    let served = cursor;
    while (taken.length < limit) {
      const after = this.nextTenantWithWork(served, kinds, budget);
      const scope = after ?? this.nextTenantWithWork(null, kinds, budget);
      if (scope === undefined) break;
      if (after === undefined && scope === served) {
        // The only tenant with work left: the rest of the claim is its jobs in key order.
        taken.push(...this.takeInOrder(scope, kinds, limit - taken.length, now, budget));
        break;
      }
      const next = this.peekReady(scope, kinds, budget) as PendingEntry;
      if (this.takeEntry(next, now)) {
        budget.take(next.kind);
        taken.push(next);
        served = scope;
      }
    }
    this.spend(budget, taken, now);
    return { taken, cursor: served };
  }

  /**
   * A claim while tenant limits exist: at most `limit` ready jobs of each scope with room (system
   * jobs first when asked for), chosen by `pickForTenants` (fair: by weighted turns).
   */
  private takeForTenants(
    scope: ScopePrefix,
    kinds: readonly string[] | null,
    limit: number,
    now: Micros,
    fair: boolean,
  ): PendingEntry[] {
    this.promote(now);
    const lanes = this.budget(now);
    const tenants = new TenantBudget(
      this.tenantLimits.values(),
      (key) => this.leasedByScope.get(key) ?? 0,
      (key) => this.tenantBuckets.get(key) ?? null,
      now,
      (l) => this.scopeByTenant.get(l.tenant) as string,
    );
    const candidates: { entry: PendingEntry; scope: string; tenant: string | null; kind: string }[] = [];
    const gather = (from: string): void => {
      const tenant = from === SYSTEM_SCOPE_PREFIX ? null : from;
      if (!tenants.hasRoom(tenant)) return;
      for (const entry of this.readyInScope(from, kinds, limit, lanes)) {
        candidates.push({ entry, scope: from, tenant, kind: entry.kind });
      }
    };
    if (scope !== null) gather(scope);
    else {
      if (leasesSystemKinds(kinds)) gather(SYSTEM_SCOPE_PREFIX);
      let next = this.nextTenantWithWork(null, kinds, lanes);
      while (next !== undefined) {
        gather(next);
        next = this.nextTenantWithWork(next, kinds, lanes);
      }
    }
    const chosen = pickForTenants(candidates, limit, fair, lanes, tenants, this.turns);
    const taken = chosen.map((c) => c.entry).filter((entry) => this.takeEntry(entry, now));
    for (const [key, bucket] of tenants.spent((k) => this.tenantBuckets.get(k) ?? null, now)) {
      this.tenantBuckets.set(key, bucket);
    }
    this.spend(lanes, taken, now);
    return taken;
  }

  /** The first `n` ready entries of `scope` in key order, of wanted kinds whose lanes have room, not paused. */
  private readyInScope(scope: string, kinds: readonly string[] | null, n: number, lanes: LaneBudget): PendingEntry[] {
    const found: PendingEntry[] = [];
    for (const [kind, tree] of this.readyByKind) {
      if (!leaseKindMatches(kind, kinds) || !lanes.hasRoom(kind)) continue;
      const paused = this.kindPauses(kind);
      if (paused.everywhere || paused.scopes.has(scope)) continue;
      let got = 0;
      for (const [key, entry] of tree.entries(scope)) {
        if (got >= n || !key.startsWith(scope)) break;
        found.push(entry);
        got++;
      }
    }
    return found.sort((a, b) => compareStrings(a.key, b.key)).slice(0, n);
  }

  /** Take `entry` out of the index; `false` when its gate turned out closed (it is gated again). */
  private takeEntry(entry: PendingEntry, now: Micros): boolean {
    this.removePending(entry.jobId);
    if (entry.notBefore !== null && entry.notBefore > now) {
      // The caller's clock is behind one that already promoted this job: gate it again.
      this.addPending(entry, now);
      return false;
    }
    return true;
  }

  /** The first tenant scope after `after` (after the system scope when `null`) with a ready job of a wanted kind. */
  private nextTenantWithWork(
    after: string | null,
    kinds: readonly string[] | null,
    budget: LaneBudget,
  ): string | undefined {
    // Past every key of the scope: a scope's keys are its 32 characters and 26 more.
    const from = (after ?? SYSTEM_SCOPE_PREFIX) + PAST_SCOPE;
    let best: string | undefined;
    for (const [kind, tree] of this.readyByKind) {
      if (!leaseKindMatches(kind, kinds) || !budget.hasRoom(kind)) continue;
      const paused = this.kindPauses(kind);
      if (paused.everywhere) continue;
      const key = firstUnpaused(tree, paused.scopes, tree.nextHigherPair(from))?.key;
      if (key !== undefined && (best === undefined || key < best)) best = key;
    }
    return best?.slice(0, SCOPE_CHARS);
  }

  /** The first ready entry in key order of a wanted kind whose lane has room, not paused. */
  private peekReady(scope: ScopePrefix, kinds: readonly string[] | null, budget: LaneBudget): PendingEntry | undefined {
    let best: PendingEntry | undefined;
    for (const [kind, tree] of this.readyByKind) {
      // A lane without room: its kind trees are not looked at, however many jobs they hold.
      if (!leaseKindMatches(kind, kinds) || !budget.hasRoom(kind)) continue;
      const paused = this.kindPauses(kind);
      if (paused.everywhere) continue;
      let candidate: PendingEntry | undefined;
      if (scope === null) candidate = firstUnpaused(tree, paused.scopes, tree.nextHigherPair(undefined));
      else if (!paused.scopes.has(scope)) candidate = firstInScope(tree, scope);
      if (candidate !== undefined && (best === undefined || candidate.key < best.key)) best = candidate;
    }
    return best;
  }

  /**
   * The earliest gate after `now` in scope (all scopes when `null`), or, sooner, the next token of
   * a rate-limited lane with concurrency room that holds back ready jobs in scope.
   */
  nextGate(scope: ScopePrefix, now: Micros): Micros | null {
    // Jobs whose gate has opened are ready: a lane's token may be what they wait for.
    if (this.limits.size > 0 || this.tenantLimits.size > 0) this.promote(now);
    let earliest: Micros | null = null;
    for (const [, entry] of this.gated.entries()) {
      if (entry.notBefore === null || entry.notBefore <= now) continue;
      if (scope === null || entry.key.startsWith(scope)) {
        earliest = entry.notBefore;
        break;
      }
    }
    for (const limit of this.limits.values()) {
      const leased = this.leasedByLane.get(limit.kindPrefix) ?? 0;
      const at = laneTokenDue(limit, leased, this.buckets.get(limit.kindPrefix) ?? null, now);
      // Only a lane with ready work in scope wakes the waiter (checked last: it walks kind trees).
      if (at === null || (earliest !== null && at >= earliest) || !this.laneHasReady(limit.kindPrefix, scope)) continue;
      earliest = at;
    }
    for (const [tenantScope, limit] of this.tenantLimits) {
      if (scope !== null && scope !== tenantScope) continue;
      const leased = this.leasedByScope.get(tenantScope) ?? 0;
      const at = laneTokenDue(limit, leased, this.tenantBuckets.get(tenantScope) ?? null, now);
      // Only a tenant with ready work wakes the waiter (checked last: it walks kind trees).
      if (at === null || (earliest !== null && at >= earliest) || !this.scopeHasReady(tenantScope)) continue;
      earliest = at;
    }
    return earliest;
  }

  /** Whether `scope` holds a ready job that no pause holds back. */
  private scopeHasReady(scope: string): boolean {
    for (const [kind, tree] of this.readyByKind) {
      const paused = this.kindPauses(kind);
      if (!paused.everywhere && !paused.scopes.has(scope) && firstInScope(tree, scope) !== undefined) return true;
    }
    return false;
  }

  /** Whether a kind tree of `lane` holds a ready job in scope that no pause holds back. */
  private laneHasReady(lane: string, scope: ScopePrefix): boolean {
    for (const [kind, tree] of this.readyByKind) {
      if (this.laneOf(kind) !== lane) continue;
      const paused = this.kindPauses(kind);
      if (paused.everywhere) continue;
      if (scope === null) {
        if (firstUnpaused(tree, paused.scopes, tree.nextHigherPair(undefined)) !== undefined) return true;
      } else if (!paused.scopes.has(scope) && firstInScope(tree, scope) !== undefined) return true;
    }
    return false;
  }

  addLeased(entry: LeasedEntry): void {
    this.removeLeased(entry.jobId);
    const deadlineKey = timeKey(entry.deadline) + entry.jobId;
    this.leasedByDeadline.set(deadlineKey, entry.jobId);
    this.leasedById.set(entry.jobId, { entry, deadlineKey });
    this.countLeased(entry.kind, +1);
    this.countScope(entry.key, +1);
  }

  removeLeased(jobId: string): void {
    const found = this.leasedById.get(jobId);
    if (found === undefined) return;
    this.leasedById.delete(jobId);
    this.leasedByDeadline.delete(found.deadlineKey);
    this.countLeased(found.entry.kind, -1);
    this.countScope(found.entry.key, -1);
  }

  /** Leased jobs whose deadline is at or before `now`, earliest first. Touches only those. */
  expired(now: Micros, limit: number): string[] {
    const horizon = timeKey(now + 1);
    const ids: string[] = [];
    for (const [deadlineKey, jobId] of this.leasedByDeadline.entries()) {
      if (deadlineKey >= horizon || ids.length >= limit) break;
      ids.push(jobId);
    }
    return ids;
  }

  leasedIds(): IterableIterator<string> {
    return this.leasedById.keys();
  }

  private readyTree(kind: string): BTree<string, PendingEntry> {
    let tree = this.readyByKind.get(kind);
    if (tree === undefined) {
      tree = newTree<PendingEntry>();
      this.readyByKind.set(kind, tree);
    }
    return tree;
  }
}

/**
 * The first entry from `pair` on whose scope is not in `paused`: one seek past each paused
 * scope's key range, never a step per paused job.
 */
function firstUnpaused(
  tree: BTree<string, PendingEntry>,
  paused: ReadonlySet<string>,
  pair: [string, PendingEntry] | undefined,
): PendingEntry | undefined {
  let next = pair;
  while (next !== undefined) {
    const scope = next[0].slice(0, SCOPE_CHARS);
    if (!paused.has(scope)) return next[1];
    next = tree.nextHigherPair(scope + PAST_SCOPE);
  }
  return undefined;
}

function firstInScope(tree: BTree<string, PendingEntry>, scope: string): PendingEntry | undefined {
  const pair = tree.getPairOrNextHigher(scope);
  return pair !== undefined && pair[0].startsWith(scope) ? pair[1] : undefined;
}
