/**
 * A small, independent reference model of the job queue (docs/design.md): plain arrays
 * and maps, every rule written out again from that page (state machine, fencing,
 * reaper, backoff, idempotency, lease order). It imports only types, the state
 * numbers, and the key-order rule for scopes (system first, then tenants by
 * their scope bytes); none of the engine's transition code.
 */
import { scopeOfTenant } from '../../src/codec/keys.ts';
import { JobState } from '../../src/core/types.ts';
import { MODEL_ORDER_WAIT, ModelLines, type BlockedRow } from './lines.ts';

/** A rate: `count` per `periodMs`. */
export interface ModelRate {
  readonly count: number;
  readonly periodMs: number;
}

export const MODEL_CONFIG = {
  lease_ttl_secs: 30,
  max_attempts: 3,
  backoff_base_secs: 10,
  backoff_factor: 4,
  backoff_cap_secs: 100,
} as const;

const SECOND = 1_000_000;

/** A scope as the model names it: a tenant name, or `null` for the system scope. */
export type ModelScope = string | null;
/** A scope filter: one scope, or every scope. */
export type ModelScopeFilter = { readonly any: true } | { readonly any: false; readonly scope: ModelScope };

export interface ModelJob {
  readonly id: string;
  readonly tenant: ModelScope;
  readonly kind: string;
  readonly priority: number;
  /** Enqueue order across the store, which is `created_at` order. */
  readonly seq: number;
  readonly maxAttempts: number | null;
  readonly idempotencyKey: string | null;
  /** The job's own attempt timeout (the model configures no kind tables), in seconds. */
  readonly timeoutSecs: number | null;
  state: JobState;
  attempts: number;
  generation: number;
  workerId: string | null;
  leaseDeadline: number | null;
  /** When the current attempt's time is up, whatever its heartbeats; set only while Leased with a timeout. */
  attemptDeadline: number | null;
  notBefore: number | null;
  continuation: readonly number[] | null;
  /** The transition of the job's newest event. */
  lastEvent: string;
  /** The latest-wins key it was enqueued with. */
  readonly supersedeKey: string | null;
  /** The job that replaced it (it was Pending and a newer job of its key came). */
  supersededBy: string | null;
  readonly orderKey: string | null;
  /** `orderOnDead: 'release'`: going Dead takes it out of its line. */
  readonly orderReleaseOnDead: boolean;
  /** While waiting for its key's turn: the gate it was enqueued with, back when its turn comes. */
  orderGate: number | null;
  /** With `debounceMaxMs`: the latest its debounce run may be due, carried to the job that replaces it. */
  debounceUntil: number | null;
}

export interface ModelLease {
  readonly job: ModelJob;
  readonly workerId: string;
  readonly generation: number;
}

/** What the model predicts an operation returns: a value, or an error code (with the lease-conflict reason). */
export type Expected<T> = { readonly ok: true; readonly value: T } | ModelError;
export interface ModelError {
  readonly ok: false;
  readonly code: string;
  readonly reason?: string;
}

export interface NewJob {
  readonly kind: string;
  /** The request is refused (`invalid_argument`) when this is `false`. */
  readonly valid: boolean;
  readonly priority: number;
  /** Absolute gate, already resolved from `notBefore` / `delayMs`. */
  readonly notBefore: number | null;
  readonly maxAttempts: number | null;
  readonly idempotencyKey: string | null;
  readonly timeoutSecs: number | null;
  readonly supersedeKey: string | null;
  /** What happens to a Leased holder of the key: runs on (`pending`), or is cancelled (`leased`). */
  readonly supersede: 'pending' | 'leased';
  /** Debounce with a max wait: the run's bound if this enqueue begins one (now + `debounceMaxMs`). */
  readonly debounceUntil: number | null;
  readonly orderKey: string | null;
  readonly orderReleaseOnDead: boolean;
}

export { MODEL_ORDER_WAIT };

/** One enqueued slot's outcome: a new job (its id supplied by the store), or an existing one by idempotency. */
export interface SlotOutcome {
  readonly job: ModelJob;
  readonly created: boolean;
}

export interface Fence {
  readonly workerId: string;
  readonly generation: number;
}

const err = (code: string, reason?: string): ModelError =>
  reason === undefined ? { ok: false, code } : { ok: false, code, reason };

export function backoffSecs(attempts: number): number {
  const { backoff_base_secs: base, backoff_factor: factor, backoff_cap_secs: cap } = MODEL_CONFIG;
  return Math.min(base * factor ** (attempts - 1), cap);
}

export class ReferenceModel {
  readonly jobs: ModelJob[] = [];
  /** Every lease ever granted, oldest first. */
  readonly leases: ModelLease[] = [];
  private readonly idempotency = new Map<string, ModelJob>();
  /**
   * Latest wins (mode `pending` only): the newest job enqueued with each (scope, key). It holds
   * the key while Pending or Leased, and not after an operator retry brings it back from Dead or
   * Cancelled (docs: a retried job runs as a plain job).
   */
  private readonly supersedeHolders = new Map<string, ModelJob>();
  private readonly byId = new Map<string, ModelJob>();
  /** Rank of each scope in key order: the system scope (nil bytes) first, tenants by their scope bytes. */
  private readonly scopeRank = new Map<ModelScope, string>();
  /** The rank of the tenant the last fair lease served; `null` before any, and after a restart. */
  private fairCursor: string | null = null;
  /** Paused prefixes, each in one scope or everywhere, as `core/pauses.ts` defines them, written again. */
  private readonly pauses: { everywhere: boolean; scope: ModelScope; prefix: string }[] = [];

  /** Kind limits by prefix, as `core/kind-limits.ts` defines them, written again. */
  private readonly limits = new Map<string, { concurrency: number | null; rate: ModelRate | null }>();
  /** Token buckets of rate-limited lanes; absent is full (and a restart empties the map where the store keeps them in memory). */
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  setLimit(prefix: string, concurrency: number | null, rate: ModelRate | 'invalid' | null): Expected<undefined> {
    if (rate === 'invalid' || (concurrency !== null && concurrency < 1) || (concurrency === null && rate === null)) {
      return err('invalid_argument');
    }
    this.limits.set(prefix, { concurrency, rate });
    if (rate === null) this.buckets.delete(prefix);
    return { ok: true, value: undefined };
  }

  clearLimit(prefix: string): Expected<undefined> {
    if (!this.limits.delete(prefix)) return err('not_found');
    this.buckets.delete(prefix);
    return { ok: true, value: undefined };
  }

  /** The longest limit prefix covering the kind, with the lease filter's system rule. */
  private lane(kind: string): string | null {
    let lane: string | null = null;
    for (const prefix of this.limits.keys()) {
      if (ReferenceModel.kindWanted(kind, [prefix]) && (lane === null || prefix.length > lane.length)) lane = prefix;
    }
    return lane;
  }

  private leasedIn(lane: string): number {
    return this.jobs.filter((j) => j.state === JobState.Leased && this.lane(j.kind) === lane).length;
  }

  /** A lane's tokens at `now`: refilled continuously, `count` per period, up to `count`. */
  private tokens(lane: string, rate: ModelRate, now: number): { tokens: number; at: number } {
    const bucket = this.buckets.get(lane);
    if (bucket === undefined) return { tokens: rate.count, at: now };
    if (now <= bucket.at) return { tokens: Math.min(bucket.tokens, rate.count), at: bucket.at };
    return {
      tokens: Math.min(rate.count, bucket.tokens + ((now - bucket.at) * rate.count) / (rate.periodMs * 1000)),
      at: now,
    };
  }

  private static whole(tokens: number): number {
    return Math.floor(tokens + 1e-9);
  }

  /** Each limit with its lane's leased jobs and whole tokens now, by prefix. */
  limitRows(now: number): [string, number | null, number, number | null][] {
    return [...this.limits.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([prefix, l]) => [
        prefix,
        l.concurrency,
        this.leasedIn(prefix),
        l.rate === null ? null : ReferenceModel.whole(this.tokens(prefix, l.rate, now).tokens),
      ]);
  }

  /** Tenant limits by tenant, as `core/tenant-limits.ts` defines them, written again. */
  private readonly tenantLimits = new Map<
    string,
    { concurrency: number | null; rate: ModelRate | null; weight: number }
  >();
  /** Token buckets of rate-limited tenants; absent is full. */
  private readonly tenantBuckets = new Map<string, { tokens: number; at: number }>();
  /** Smooth weighted round robin's credit per tenant; forgotten by a tenant that cannot be served, and at a restart. */
  private credits = new Map<string, number>();

  setTenantLimit(
    tenant: string,
    concurrency: number | null,
    rate: ModelRate | 'invalid' | null,
    weight: number,
  ): Expected<undefined> {
    if (
      rate === 'invalid' ||
      (concurrency !== null && concurrency < 1) ||
      weight < 1 ||
      weight > 1_000 ||
      (concurrency === null && rate === null && weight === 1)
    ) {
      return err('invalid_argument');
    }
    this.tenantLimits.set(tenant, { concurrency, rate, weight });
    if (rate === null) this.tenantBuckets.delete(tenant);
    return { ok: true, value: undefined };
  }

  clearTenantLimit(tenant: string): Expected<undefined> {
    if (!this.tenantLimits.delete(tenant)) return err('not_found');
    this.tenantBuckets.delete(tenant);
    return { ok: true, value: undefined };
  }

  private leasedOf(tenant: string): number {
    return this.jobs.filter((j) => j.state === JobState.Leased && j.tenant === tenant).length;
  }

  private static refilled(
    bucket: { tokens: number; at: number } | undefined,
    rate: ModelRate,
    now: number,
  ): { tokens: number; at: number } {
    if (bucket === undefined) return { tokens: rate.count, at: now };
    if (now <= bucket.at) return { tokens: Math.min(bucket.tokens, rate.count), at: bucket.at };
    return {
      tokens: Math.min(rate.count, bucket.tokens + ((now - bucket.at) * rate.count) / (rate.periodMs * 1000)),
      at: now,
    };
  }

  /** Each tenant limit with the tenant's leased jobs and whole tokens now, by tenant. */
  tenantRows(now: number): [string, number | null, number, number, number | null][] {
    return [...this.tenantLimits.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([tenant, l]) => [
        tenant,
        l.concurrency,
        l.weight,
        this.leasedOf(tenant),
        l.rate === null
          ? null
          : ReferenceModel.whole(ReferenceModel.refilled(this.tenantBuckets.get(tenant), l.rate, now).tokens),
      ]);
  }

  /** A claim's room per limited tenant: what its concurrency leaves, and its whole tokens. */
  private tenantRoom(now: number): Map<string, number> {
    const room = new Map<string, number>();
    for (const [tenant, l] of this.tenantLimits) {
      let r = l.concurrency === null ? Infinity : Math.max(0, l.concurrency - this.leasedOf(tenant));
      if (l.rate !== null) {
        r = Math.min(
          r,
          ReferenceModel.whole(ReferenceModel.refilled(this.tenantBuckets.get(tenant), l.rate, now).tokens),
        );
      }
      room.set(tenant, r);
    }
    return room;
  }

  /**
   * The fair order while tenant limits exist: system jobs first in key order, then turn by turn
   * the servable tenant (its room left, a first job whose lane has room) with the most credit after
   * each gains its weight, the first in scope order on a tie; it pays the turn's total weight.
   */
  private weightedOrder(
    eligible: readonly ModelJob[],
    limit: number,
    lanes: { admit: (job: ModelJob) => boolean; fits: (job: ModelJob) => boolean },
    room: Map<string, number>,
  ): ModelJob[] {
    const chosen = this.inOrder(
      eligible.filter((job) => job.tenant === null),
      limit,
      lanes.admit,
    );
    const tenants = [...new Set(eligible.filter((job) => job.tenant !== null).map((job) => job.tenant as string))].sort(
      (a, b) => (this.rankOf(a) < this.rankOf(b) ? -1 : 1),
    );
    const queues = new Map(tenants.map((t) => [t, eligible.filter((job) => job.tenant === t)]));
    while (chosen.length < limit) {
      const servable: string[] = [];
      for (const tenant of tenants) {
        const queue = queues.get(tenant) as ModelJob[];
        while (queue.length > 0 && !lanes.fits(queue[0] as ModelJob)) queue.shift();
        if (queue.length > 0 && (room.get(tenant) ?? Infinity) > 0) servable.push(tenant);
      }
      const total = servable.reduce((sum, t) => sum + (this.tenantLimits.get(t)?.weight ?? 1), 0);
      const credits = new Map<string, number>();
      let best: string | null = null;
      for (const tenant of servable) {
        const credit = (this.credits.get(tenant) ?? 0) + (this.tenantLimits.get(tenant)?.weight ?? 1);
        credits.set(tenant, credit);
        if (best === null || credit > (credits.get(best) as number)) best = tenant;
      }
      if (best !== null) credits.set(best, (credits.get(best) as number) - total);
      this.credits = credits;
      if (best === null) break;
      const job = (queues.get(best) as ModelJob[]).shift() as ModelJob;
      lanes.admit(job);
      room.set(best, (room.get(best) ?? Infinity) - 1);
      chosen.push(job);
    }
    return chosen;
  }

  /** A claim's room per lane: what the concurrency leaves, and whole tokens. `admit` takes one of a job's lane. */
  private laneRoom(now: number): {
    admit: (job: ModelJob) => boolean;
    fits: (job: ModelJob) => boolean;
    taken: Map<string, number>;
  } {
    const room = new Map<string, number>();
    for (const [prefix, l] of this.limits) {
      let r = l.concurrency === null ? Infinity : Math.max(0, l.concurrency - this.leasedIn(prefix));
      if (l.rate !== null) r = Math.min(r, ReferenceModel.whole(this.tokens(prefix, l.rate, now).tokens));
      room.set(prefix, r);
    }
    const taken = new Map<string, number>();
    const admit = (job: ModelJob): boolean => {
      const lane = this.lane(job.kind);
      if (lane === null) return true;
      const r = room.get(lane) ?? 0;
      if (r <= 0) return false;
      room.set(lane, r - 1);
      taken.set(lane, (taken.get(lane) ?? 0) + 1);
      return true;
    };
    const fits = (job: ModelJob): boolean => {
      const lane = this.lane(job.kind);
      return lane === null || (room.get(lane) ?? 0) > 0;
    };
    return { admit, fits, taken };
  }

  /** `scope` `undefined`: everywhere. */
  pause(scope: ModelScope | undefined, prefix: string): Expected<undefined> {
    if (typeof scope === 'string' && prefix.startsWith('system:')) return err('invalid_argument');
    if (this.pauseAt(scope, prefix) === -1) {
      this.pauses.push({ everywhere: scope === undefined, scope: scope ?? null, prefix });
    }
    return { ok: true, value: undefined };
  }

  resume(scope: ModelScope | undefined, prefix: string): Expected<undefined> {
    const at = this.pauseAt(scope, prefix);
    if (at === -1) return err('not_found');
    this.pauses.splice(at, 1);
    return { ok: true, value: undefined };
  }

  private pauseAt(scope: ModelScope | undefined, prefix: string): number {
    return this.pauses.findIndex(
      (p) => p.prefix === prefix && (scope === undefined ? p.everywhere : !p.everywhere && p.scope === scope),
    );
  }

  private paused(job: ModelJob): boolean {
    return this.pauses.some(
      (p) => (p.everywhere || p.scope === job.tenant) && ReferenceModel.kindWanted(job.kind, [p.prefix]),
    );
  }

  jobById(id: string): ModelJob | undefined {
    return this.byId.get(id);
  }

  private rankOf(scope: ModelScope): string {
    let rank = this.scopeRank.get(scope);
    if (rank === undefined) {
      rank = scope === null ? '' : scopeOfTenant(scope).toString('hex');
      this.scopeRank.set(scope, rank);
    }
    return rank;
  }

  /** The key order of Pending rows: (scope bytes, priority, created_at). */
  compareKeyOrder(a: ModelJob, b: ModelJob): number {
    const ra = this.rankOf(a.tenant);
    const rb = this.rankOf(b.tenant);
    if (ra !== rb) return ra < rb ? -1 : 1;
    return a.priority - b.priority || a.seq - b.seq;
  }

  static inFilter(job: ModelJob, filter: ModelScopeFilter): boolean {
    return filter.any || job.tenant === filter.scope;
  }

  /** Ordered keys' lines (`lines.ts`). */
  private readonly lines = new ModelLines();

  /** An operator's release of an ordered key (`ModelLines.release`). */
  releaseKey(scope: ModelScope, key: string): Expected<ModelJob | null> {
    const released = this.lines.release(scope, key);
    return released.ok ? released : err(released.code);
  }

  /** Blocked ordered keys in listing order. */
  blockedKeys(): BlockedRow[] {
    return this.lines.blocked();
  }

  /**
   * Enqueue into one scope, all or nothing. `freshId(i)` is the id the store gave the i-th slot;
   * it is asked only for slots the model decides are new jobs.
   */
  enqueue(scope: ModelScope, requests: readonly NewJob[], freshId: (i: number) => string): Expected<SlotOutcome[]> {
    if (requests.some((r) => !r.valid)) return err('invalid_argument');
    const staged = new Map<string, ModelJob>();
    const outcomes: SlotOutcome[] = [];
    const created: ModelJob[] = [];
    for (const [i, request] of requests.entries()) {
      const slot = request.idempotencyKey === null ? null : `${scope ?? ''}\u0000${request.idempotencyKey}`;
      const existing = slot === null ? undefined : (this.idempotency.get(slot) ?? staged.get(slot));
      if (existing !== undefined) {
        outcomes.push({ job: existing, created: false });
        continue;
      }
      const job: ModelJob = {
        id: freshId(i),
        tenant: scope,
        kind: request.kind,
        priority: request.priority,
        seq: this.jobs.length + created.length,
        maxAttempts: request.maxAttempts,
        idempotencyKey: request.idempotencyKey,
        timeoutSecs: request.timeoutSecs,
        state: JobState.Pending,
        attempts: 0,
        generation: 0,
        workerId: null,
        leaseDeadline: null,
        attemptDeadline: null,
        notBefore: request.notBefore,
        continuation: null,
        lastEvent: 'enqueued',
        supersedeKey: request.supersedeKey,
        supersededBy: null,
        orderKey: request.orderKey,
        orderReleaseOnDead: request.orderReleaseOnDead,
        orderGate: null,
        debounceUntil: request.debounceUntil,
      };
      if (request.supersedeKey !== null) {
        // Every request is valid by now, so this may change holders: the call writes all or nothing.
        const keySlot = `${scope ?? ''}\u0000${request.supersedeKey}`;
        const holder = this.supersedeHolders.get(keySlot);
        // A Pending holder is replaced; a Leased one too when the request says `leased` (its lease
        // ends with it, so its holder's late results are refused), else it runs on. A finished one
        // held nothing. Either way the new job holds the key.
        const pending = holder?.state === JobState.Pending;
        if (holder !== undefined && (pending || (holder.state === JobState.Leased && request.supersede === 'leased'))) {
          // A debounce run goes on: the new job keeps the run's bound, and is due by it.
          if (pending && job.debounceUntil !== null && holder.debounceUntil !== null) {
            job.debounceUntil = holder.debounceUntil;
            job.notBefore = Math.min(job.notBefore ?? holder.debounceUntil, holder.debounceUntil);
          }
          this.leaveLease(holder);
          holder.state = JobState.Cancelled;
          holder.lastEvent = 'cancelled';
          holder.supersededBy = job.id;
        }
        this.supersedeHolders.set(keySlot, job);
      }
      // Ordered key: behind any job still in the key's line (this call's included), it waits.
      if (request.orderKey !== null && this.lines.mustWait(scope, request.orderKey, created)) {
        job.orderGate = job.notBefore;
        job.notBefore = MODEL_ORDER_WAIT;
      }
      if (slot !== null) staged.set(slot, job);
      created.push(job);
      outcomes.push({ job, created: true });
    }
    for (const job of created) {
      if (this.byId.has(job.id)) throw new Error(`the store reused job id ${job.id} for a new job`);
      this.jobs.push(job);
      this.byId.set(job.id, job);
      this.lines.join(job);
    }
    for (const [slot, job] of staged) this.idempotency.set(slot, job);
    return { ok: true, value: outcomes };
  }

  /** Lease up to `limit` ready jobs in key order: Pending, past the gate, of a wanted kind, in scope. */
  lease(
    filter: ModelScopeFilter,
    kinds: readonly string[] | undefined,
    workerId: string,
    limit: number,
    now: number,
  ): ModelJob[] {
    const wanted = kinds === undefined || kinds.length === 0 ? null : kinds;
    const eligible = this.jobs
      .filter(
        (job) =>
          job.state === JobState.Pending &&
          ReferenceModel.inFilter(job, filter) &&
          (job.notBefore === null || job.notBefore <= now) &&
          ReferenceModel.kindWanted(job.kind, wanted) &&
          !this.paused(job),
      )
      .sort((a, b) => this.compareKeyOrder(a, b));
    const lanes = this.laneRoom(now);
    const { admit, taken } = lanes;
    let ready: ModelJob[];
    if (this.tenantLimits.size > 0) {
      const room = this.tenantRoom(now);
      ready = filter.any
        ? this.weightedOrder(eligible, limit, lanes, room)
        : this.inOrder(eligible, limit, (job) => {
            if (job.tenant !== null && (room.get(job.tenant) ?? Infinity) <= 0) return false;
            if (!admit(job)) return false;
            if (job.tenant !== null && room.has(job.tenant)) room.set(job.tenant, (room.get(job.tenant) as number) - 1);
            return true;
          });
      const spent = new Map<string, number>();
      for (const job of ready) if (job.tenant !== null) spent.set(job.tenant, (spent.get(job.tenant) ?? 0) + 1);
      for (const [tenant, n] of spent) {
        const rate = this.tenantLimits.get(tenant)?.rate ?? null;
        if (rate === null) continue;
        const bucket = ReferenceModel.refilled(this.tenantBuckets.get(tenant), rate, now);
        this.tenantBuckets.set(tenant, { tokens: Math.max(0, bucket.tokens - n), at: bucket.at });
      }
    } else {
      ready = filter.any ? this.fairOrder(eligible, limit, admit) : this.inOrder(eligible, limit, admit);
    }
    for (const [lane, n] of taken) {
      const rate = this.limits.get(lane)?.rate ?? null;
      if (rate === null) continue;
      const bucket = this.tokens(lane, rate, now);
      this.buckets.set(lane, { tokens: Math.max(0, bucket.tokens - n), at: bucket.at });
    }
    for (const job of ready) {
      job.state = JobState.Leased;
      job.generation += 1;
      job.workerId = workerId;
      job.attemptDeadline = job.timeoutSecs === null ? null : now + job.timeoutSecs * SECOND;
      job.leaseDeadline = ReferenceModel.extendedDeadline(job, now);
      job.continuation = null;
      job.lastEvent = 'leased';
      this.leases.push({ job, workerId, generation: job.generation });
    }
    return ready;
  }

  /**
   * The fleet's fair order, written out again: system jobs first, then one job per tenant in
   * turn, tenants in scope order from the first one after the tenant served last, wrapping.
   * `eligible` is in key order, so each tenant's jobs are too.
   */
  private inOrder(eligible: readonly ModelJob[], limit: number, admit: (job: ModelJob) => boolean): ModelJob[] {
    const chosen: ModelJob[] = [];
    for (const job of eligible) {
      if (chosen.length >= limit) break;
      if (admit(job)) chosen.push(job);
    }
    return chosen;
  }

  private fairOrder(eligible: readonly ModelJob[], limit: number, admit: (job: ModelJob) => boolean): ModelJob[] {
    const chosen = this.inOrder(
      eligible.filter((job) => job.tenant === null),
      limit,
      admit,
    );
    const tenants = [...new Set(eligible.filter((job) => job.tenant !== null).map((job) => job.tenant))].sort((a, b) =>
      this.rankOf(a) < this.rankOf(b) ? -1 : 1,
    );
    const queues = new Map(tenants.map((t) => [t, eligible.filter((job) => job.tenant === t)]));
    const start = tenants.findIndex((t) => this.fairCursor === null || this.rankOf(t) > this.fairCursor);
    let at = start === -1 ? 0 : start;
    while (chosen.length < limit && [...queues.values()].some((q) => q.length > 0)) {
      const tenant = tenants[at % tenants.length] as ModelScope;
      // A job its lane has no room for is passed over; a tenant with nothing admitted is not served.
      const queue = queues.get(tenant) ?? [];
      let job = queue.shift();
      while (job !== undefined && !admit(job)) job = queue.shift();
      if (job !== undefined) {
        chosen.push(job);
        this.fairCursor = this.rankOf(tenant);
      }
      at++;
    }
    return chosen;
  }

  /**
   * A reopened store forgets whom its fair order served last, and, unless it keeps them in the
   * database (PostgreSQL), its token buckets: they start full again.
   */
  restarted(options: { readonly keepBuckets: boolean }): void {
    this.fairCursor = null;
    this.credits = new Map();
    if (!options.keepBuckets) {
      this.buckets.clear();
      this.tenantBuckets.clear();
    }
  }

  /** One lease TTL from now, but never past the attempt's deadline: the job timeout outranks heartbeats. */
  private static extendedDeadline(job: ModelJob, now: number): number {
    const byTtl = now + MODEL_CONFIG.lease_ttl_secs * SECOND;
    return job.attemptDeadline === null ? byTtl : Math.min(byTtl, job.attemptDeadline);
  }

  /**
   * A lease's kind filter: any prefix of the kind, none meaning every kind; but a
   * system kind (`system:...`) only for a prefix that is a system prefix itself.
   */
  static kindWanted(kind: string, wanted: readonly string[] | null): boolean {
    const system = kind.startsWith('system:');
    if (wanted === null) return !system;
    return wanted.some((prefix) => kind.startsWith(prefix) && (!system || prefix.startsWith('system:')));
  }

  /**
   * The fencing check: a cancelled job first (its last holder learns why), then the worker (a job
   * nobody leases fails it), then the generation.
   */
  private fenceError(job: ModelJob, fence: Fence): ModelError | null {
    if (job.state === JobState.Cancelled) return err('lease_conflict', 'cancelled');
    if (job.state !== JobState.Leased || job.workerId !== fence.workerId)
      return err('lease_conflict', 'worker_mismatch');
    if (job.generation !== fence.generation) return err('lease_conflict', 'generation_superseded');
    return null;
  }

  /** Common guard of every operation by id: unknown, or outside the caller's scope, reads as not found. */
  private locate(id: string, filter: ModelScopeFilter): ModelJob | ModelError {
    const job = this.byId.get(id);
    if (job === undefined || !ReferenceModel.inFilter(job, filter)) return err('not_found');
    return job;
  }

  extend(id: string, fence: Fence, filter: ModelScopeFilter, now: number): Expected<ModelJob> {
    const job = this.locate(id, filter);
    if ('ok' in job) return job;
    const conflict = this.fenceError(job, fence);
    if (conflict) return conflict;
    job.leaseDeadline = ReferenceModel.extendedDeadline(job, now);
    job.lastEvent = 'extended';
    return { ok: true, value: job };
  }

  checkpoint(
    id: string,
    fence: Fence,
    filter: ModelScopeFilter,
    bytes: readonly number[],
    now: number,
  ): Expected<ModelJob> {
    const job = this.locate(id, filter);
    if ('ok' in job) return job;
    const conflict = this.fenceError(job, fence);
    if (conflict) return conflict;
    job.continuation = [...bytes];
    job.leaseDeadline = ReferenceModel.extendedDeadline(job, now);
    job.lastEvent = 'checkpoint';
    return { ok: true, value: job };
  }

  /**
   * Complete, with successors enqueued in the job's scope in the same atomic step.
   * Successor requests are validated before the fence is checked; any refusal writes nothing.
   */
  complete(
    id: string,
    fence: Fence,
    filter: ModelScopeFilter,
    successors: (scope: ModelScope) => readonly NewJob[],
    freshId: (i: number) => string,
  ): Expected<{ job: ModelJob; successors: SlotOutcome[] }> {
    const job = this.locate(id, filter);
    if ('ok' in job) return job;
    const requests = successors(job.tenant);
    if (requests.some((r) => !r.valid)) return err('invalid_argument');
    const conflict = this.fenceError(job, fence);
    if (conflict) return conflict;
    this.leaveLease(job);
    job.state = JobState.Completed;
    job.lastEvent = 'completed';
    this.lines.settle(job);
    const chained = this.enqueue(job.tenant, requests, freshId);
    if (!chained.ok) throw new Error('unreachable: successors were validated');
    return { ok: true, value: { job, successors: chained.value } };
  }

  fail(id: string, fence: Fence, filter: ModelScopeFilter, retryable: boolean, now: number): Expected<ModelJob> {
    const job = this.locate(id, filter);
    if ('ok' in job) return job;
    const conflict = this.fenceError(job, fence);
    if (conflict) return conflict;
    this.leaveLease(job);
    job.attempts += 1;
    if (!retryable) {
      job.state = JobState.Dead;
      job.lastEvent = 'dead';
      this.lines.settle(job);
    } else {
      this.retryOrDeadLetter(job, now, 'failed');
    }
    return { ok: true, value: job };
  }

  /** The holder hands the job back: Pending and ready now, attempts as they were, the generation too. */
  release(id: string, fence: Fence, filter: ModelScopeFilter): Expected<ModelJob> {
    const job = this.locate(id, filter);
    if ('ok' in job) return job;
    const conflict = this.fenceError(job, fence);
    if (conflict) return conflict;
    this.leaveLease(job);
    job.state = JobState.Pending;
    job.notBefore = null;
    job.lastEvent = 'released';
    return { ok: true, value: job };
  }

  /** Every Leased job whose deadline is at or before now: an attempt used, back to Pending with backoff or Dead. */
  reap(now: number): { reaped: number; dead: number } {
    let reaped = 0;
    let dead = 0;
    for (const job of this.jobs) {
      if (job.state !== JobState.Leased || job.leaseDeadline === null || job.leaseDeadline > now) continue;
      this.leaveLease(job);
      job.attempts += 1;
      const after = this.retryOrDeadLetter(job, now, 'reaped');
      reaped++;
      if (after === JobState.Dead) dead++;
    }
    return { reaped, dead };
  }

  /** Operator retry: only a Dead or Cancelled job, back to Pending with its attempts reset and no gate. */
  retry(id: string, filter: ModelScopeFilter): Expected<ModelJob> {
    const job = this.locate(id, filter);
    if ('ok' in job) return job;
    if (job.state !== JobState.Dead && job.state !== JobState.Cancelled) return err('failed_precondition');
    if (job.supersedeKey !== null) {
      const keySlot = `${job.tenant ?? ''}\u0000${job.supersedeKey}`;
      if (this.supersedeHolders.get(keySlot) === job) this.supersedeHolders.delete(keySlot);
    }
    job.state = JobState.Pending;
    job.attempts = 0;
    job.notBefore = null;
    job.lastEvent = 'retried';
    return { ok: true, value: job };
  }

  /** Cancel a Pending or Leased job: Cancelled, the lease (if any) gone, the generation kept. */
  cancel(id: string, filter: ModelScopeFilter): Expected<ModelJob> {
    const job = this.locate(id, filter);
    if ('ok' in job) return job;
    if (job.state !== JobState.Pending && job.state !== JobState.Leased) return err('failed_precondition');
    this.leaveLease(job);
    job.state = JobState.Cancelled;
    job.lastEvent = 'cancelled';
    this.lines.settle(job);
    return { ok: true, value: job };
  }

  /** Operator discard: only a Dead job, to Cancelled; attempts, generation and gate as they were. */
  discard(id: string, filter: ModelScopeFilter): Expected<ModelJob> {
    const job = this.locate(id, filter);
    if ('ok' in job) return job;
    if (job.state !== JobState.Dead) return err('failed_precondition');
    job.state = JobState.Cancelled;
    job.lastEvent = 'discarded';
    this.lines.settle(job);
    return { ok: true, value: job };
  }

  /** Operator run now: only a Pending job whose gate is still closed; the gate goes, nothing else. */
  runNow(id: string, filter: ModelScopeFilter, now: number): Expected<ModelJob> {
    const job = this.locate(id, filter);
    if ('ok' in job) return job;
    if (job.state !== JobState.Pending || job.notBefore === null || job.notBefore <= now) {
      return err('failed_precondition');
    }
    // Waiting for its ordered key's turn is not a gate an operator skips.
    if (job.notBefore === MODEL_ORDER_WAIT) return err('failed_precondition');
    job.notBefore = null;
    job.lastEvent = 'run_now';
    return { ok: true, value: job };
  }

  /** Cancel every job of `states` in the filter whose kind starts with `prefix`; returns how many. */
  cancelMatching(filter: ModelScopeFilter, states: readonly JobState[], prefix: string | undefined): number {
    let cancelled = 0;
    // One state at a time, oldest first in each: a cancel can give an ordered key's next job its turn.
    for (const state of new Set(states)) {
      for (const job of this.jobs) {
        if (!ReferenceModel.inFilter(job, filter) || job.state !== state) continue;
        if (prefix !== undefined && !job.kind.startsWith(prefix)) continue;
        this.cancel(job.id, filter);
        cancelled++;
      }
    }
    return cancelled;
  }

  /** Rows per (state, kind) in a scope filter, sorted by state then kind. */
  counts(filter: ModelScopeFilter): { state: number; kind: string; count: number }[] {
    const totals = new Map<string, { state: number; kind: string; count: number }>();
    for (const job of this.jobs) {
      if (!ReferenceModel.inFilter(job, filter)) continue;
      const slot = `${job.state}/${job.kind}`;
      const row = totals.get(slot) ?? { state: job.state, kind: job.kind, count: 0 };
      row.count++;
      totals.set(slot, row);
    }
    return [...totals.values()].sort((a, b) => a.state - b.state || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
  }

  /** Jobs of one state in key order (every scope). */
  /**
   * A listing of one state across every scope: by enqueue order (`created_at`, whatever the
   * priority or scope), newest first unless asked otherwise; system jobs only when asked for.
   */
  listed(state: JobState, order: 'newest_first' | 'oldest_first', includeSystem: boolean): ModelJob[] {
    return this.jobs
      .filter((j) => j.state === state && (includeSystem || j.tenant !== null))
      .sort((a, b) => (order === 'newest_first' ? b.seq - a.seq : a.seq - b.seq));
  }

  /**
   * The earliest gate after now among Pending jobs, or, sooner, the next whole token of a
   * rate-limited lane with concurrency room that holds back a ready, unpaused job.
   */
  nextGate(now: number): number | null {
    let earliest: number | null = null;
    for (const job of this.jobs) {
      if (job.state !== JobState.Pending) continue;
      let at: number | null = null;
      if (job.notBefore !== null && job.notBefore > now) at = job.notBefore;
      else if (!this.paused(job)) {
        const lane = this.tokenDue(job.kind, now);
        const tenant = this.tenantTokenDue(job.tenant, now);
        at = lane === null ? tenant : tenant === null ? lane : Math.min(lane, tenant);
      }
      if (at !== null && (earliest === null || at < earliest)) earliest = at;
    }
    return earliest;
  }

  private tokenDue(kind: string, now: number): number | null {
    const lane = this.lane(kind);
    const l = lane === null ? undefined : this.limits.get(lane);
    if (lane === null || l === undefined || l.rate === null) return null;
    if (l.concurrency !== null && this.leasedIn(lane) >= l.concurrency) return null;
    const bucket = this.tokens(lane, l.rate, now);
    if (ReferenceModel.whole(bucket.tokens) >= 1) return null;
    const wait = Math.ceil(((1 - bucket.tokens) * l.rate.periodMs * 1000) / l.rate.count - 1e-9);
    return bucket.at + Math.max(1, wait);
  }

  private tenantTokenDue(tenant: ModelScope, now: number): number | null {
    const l = tenant === null ? undefined : this.tenantLimits.get(tenant);
    if (tenant === null || l === undefined || l.rate === null) return null;
    if (l.concurrency !== null && this.leasedOf(tenant) >= l.concurrency) return null;
    const bucket = ReferenceModel.refilled(this.tenantBuckets.get(tenant), l.rate, now);
    if (ReferenceModel.whole(bucket.tokens) >= 1) return null;
    const wait = Math.ceil(((1 - bucket.tokens) * l.rate.periodMs * 1000) / l.rate.count - 1e-9);
    return bucket.at + Math.max(1, wait);
  }

  private leaveLease(job: ModelJob): void {
    job.workerId = null;
    job.leaseDeadline = null;
    job.attemptDeadline = null;
    job.continuation = null;
  }

  /** Returns the state the job moved to. */
  private retryOrDeadLetter(job: ModelJob, now: number, retriedEvent: string): JobState {
    const ceiling = job.maxAttempts ?? MODEL_CONFIG.max_attempts;
    if (job.attempts >= ceiling) {
      job.state = JobState.Dead;
      job.lastEvent = 'dead';
      this.lines.settle(job);
      return job.state;
    }
    job.state = JobState.Pending;
    job.notBefore = now + backoffSecs(job.attempts) * SECOND;
    job.lastEvent = retriedEvent;
    return job.state;
  }
}
