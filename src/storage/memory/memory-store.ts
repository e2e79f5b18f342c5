/**
 * The in-memory reference backend: the queue's algorithms (docs/design.md) written as plainly as
 * possible (full scans, sorts by the real key bytes), used as the oracle the
 * other backends are compared with, and as a store for tests and demos.
 * Every method is synchronous inside, so each is trivially atomic.
 */
import { invalidArgument, notFound, storeClosed } from '../../core/errors.ts';
import {
  scheduleExists,
  scheduleInScope,
  tooManySchedules,
  type Schedule,
  type ScheduleFiring,
} from '../../core/schedules.ts';
import {
  admitPause,
  comparePauses,
  isRecordPaused,
  pauseInFilter,
  pauseKey,
  type Pause,
  type PauseBounds,
  type PauseScope,
} from '../../core/pauses.ts';
import {
  laneTokenDue,
  admitKindLimit,
  compareKindLimits,
  LaneBudget,
  limitLane,
  limitStatus,
  pickWithinLimits,
  type KindLimit,
  type KindLimitStatus,
  type TokenBucket,
} from '../../core/kind-limits.ts';
import { enqueue, isLeasable, isLeaseExpired, kindMatches } from '../../core/transitions.ts';
import { withCreatedAt } from '../../core/drafts.ts';
import { compareListed, listedAfter } from '../../core/list-order.ts';
import {
  formatPosition,
  logEntryExpired,
  logEntryOf,
  logMatches,
  parsePosition,
  positionPruned,
  transitionOf,
  type LogEntry,
  type LogFilter,
  type LogPage,
  type LogPruneParams,
  type LogRecord,
} from '../../core/transitions-log.ts';
import { randomBytes } from 'node:crypto';
import {
  finishedAt,
  itemFailed,
  itemOk,
  JobState,
  type ItemResult,
  type JobRecord,
  type Micros,
  type QueueScope,
  type ScopeFilter,
} from '../../core/types.ts';
import { jobKeyOf, pageTokenAfter, pageTokenPosition, scopeOfTenant } from '../../codec/keys.ts';
import { schedulePageKey, schedulePageToken, scheduleSortKey } from '../../codec/schedules.ts';
import { fairPick } from '../../core/fair-order.ts';
import {
  admitTenantLimit,
  compareTenantLimits,
  pickForTenants,
  TenantBudget,
  tenantLimitStatus,
  WeightedTurns,
  type TenantLimit,
  type TenantLimitStatus,
} from '../../core/tenant-limits.ts';
import { idempotencySlot, inScope } from '../../core/scope.ts';
import { holdsKeyIn, releasesSupersedeKey, supersedeSlot } from '../../core/supersede.ts';
import { planSupersede, supersededOutcomes } from '../supersede-plan.ts';
import { isWaiting, keyNotBlocked, lineBlocked, orderSlot, type BlockedKey } from '../../core/ordered-keys.ts';
import { blockedOf, LineJoins, leavesLine, nextTurn } from '../order-plan.ts';
import { CreatedAtSequence } from '../shared.ts';
import { planKeysImport } from '../stored-keys.ts';
import type {
  Change,
  ImportOutcome,
  KeysImportOutcome,
  StoredKeys,
  ClaimParams,
  CountRow,
  FiredSchedule,
  InsertOutcome,
  JobDraft,
  JobStore,
  ListPage,
  ListQuery,
  PruneParams,
  SchedulePage,
  ScheduleQuery,
  StoreMetrics,
  StoreStats,
  UpdateItem,
  UpdateOutcome,
} from '../types.ts';

function earlier(a: Micros | null, b: Micros | null): Micros | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}

function scopeHex(record: JobRecord): string {
  return scopeOfTenant(record.tenant).toString('hex');
}

function byKey(a: JobRecord, b: JobRecord): number {
  return Buffer.compare(jobKeyOf(a), jobKeyOf(b));
}

export interface MemoryStoreOptions {
  /** Append to the transitions log (Watch reads it). Default `true`; `watch.enabled`. */
  readonly transitionsLog?: boolean;
}

/** A memory store's log position: `m1.<store id>.<seq>`. */
const LOG_FORMAT = 'm1';

export class MemoryJobStore implements JobStore {
  readonly backend = 'memory';
  /** The transitions log: entry `seq` is at index `seq - logFirst`. */
  private readonly log: LogRecord[] = [];
  /** The seq of `log[0]`; entries before it were pruned. */
  private logFirst = 1;
  private readonly logId = randomBytes(6).toString('hex');
  private readonly logging: boolean;

  constructor(options: MemoryStoreOptions = {}) {
    this.logging = options.transitionsLog ?? true;
  }

  private readonly jobs = new Map<string, JobRecord>();
  private readonly idempotency = new Map<string, string>();
  /** Supersede keys: `supersedeSlot` → the id of the job holding the key (`core/supersede.ts`). */
  private readonly supersedeKeys = new Map<string, string>();
  /**
   * Ordered keys' lines (`core/ordered-keys.ts`): `orderSlot` → the key and the ids of the jobs
   * in its line, oldest first. A pruned head's id stays until an operator releases the key.
   */
  private readonly lines = new Map<string, { tenant: string | null; key: string; ids: string[] }>();
  private readonly createdAt = new CreatedAtSequence(0);
  /** The fair order's cursor: the scope (hex) of the tenant a fair claim served last. */
  private fairCursor: string | null = null;
  /** Schedules by the hex of their sort key (`[scope 32][name]`), the order they list in. */
  private readonly schedules = new Map<string, Schedule>();
  /** Pauses by `pauseKey`. */
  private readonly pauses = new Map<string, Pause>();
  /** Kind limits by prefix, and the token buckets of the rate-limited ones (absent: full). */
  private readonly limits = new Map<string, KindLimit>();
  private readonly buckets = new Map<string, TokenBucket>();
  /** Tenant limits by tenant, their token buckets (absent: full), and the weighted fair order's credits. */
  private readonly tenantLimits = new Map<string, TenantLimit>();
  private readonly tenantBuckets = new Map<string, TokenBucket>();
  private readonly turns = new WeightedTurns();
  private closed = false;

  insert(drafts: readonly JobDraft[], now: Micros): Promise<InsertOutcome[]> {
    return Promise.resolve(this.insertNow(drafts, now, new Map()));
  }

  /** Plans every insert first and applies them only if all succeed; `staged` holds this write's other new jobs. */
  private insertNow(drafts: readonly JobDraft[], now: Micros, staged: Map<string, JobRecord>): InsertOutcome[] {
    const outcomes: InsertOutcome[] = [];
    const records: (JobRecord | null)[] = [];
    const joins = new LineJoins((tenant, key) => (this.lines.get(orderSlot(tenant, key))?.ids.length ?? 0) > 0);
    for (const draft of drafts) {
      const slot = draft.idempotencyKey === null ? null : idempotencySlot(draft.tenant, draft.idempotencyKey);
      const existingId = slot === null ? undefined : this.idempotency.get(slot);
      const existing =
        existingId === undefined ? (slot === null ? undefined : staged.get(slot)) : this.jobs.get(existingId);
      if (existing !== undefined) {
        outcomes.push({ record: existing, created: false });
        records.push(null);
        continue;
      }
      const record = joins.place(enqueue(withCreatedAt(draft, this.createdAt.next(now)), now));
      if (slot !== null) staged.set(slot, record);
      outcomes.push({ record, created: true });
      records.push(record);
    }
    const plan = planSupersede(
      drafts,
      records,
      (draft) => this.jobs.get(this.supersedeKeys.get(supersedeSlot(draft.tenant, draft.supersedeKey)) ?? '') ?? null,
      now,
    );
    for (const record of plan.cancelled) {
      this.jobs.set(record.jobId, record);
      this.appendLog(record);
    }
    for (const record of records) {
      if (record === null) continue;
      this.appendLog(record);
      this.jobs.set(record.jobId, record);
      if (record.idempotencyKey !== null) {
        this.idempotency.set(idempotencySlot(record.tenant, record.idempotencyKey), record.jobId);
      }
    }
    for (const [slot, holder] of plan.holders) this.supersedeKeys.set(slot, holder.jobId);
    for (const joined of joins.joined.values()) this.joinLine(joined);
    return supersededOutcomes(outcomes, records, plan);
  }

  /** `joined`, jobs of one key oldest first, join the end of its line. */
  private joinLine(joined: readonly JobRecord[]): void {
    const first = joined[0] as JobRecord;
    const slot = orderSlot(first.tenant, first.orderKey ?? '');
    const line = this.lines.get(slot) ?? { tenant: first.tenant, key: first.orderKey ?? '', ids: [] };
    line.ids.push(...joined.map((r) => r.jobId));
    this.lines.set(slot, line);
  }

  /** `after` replaces `before`: if it left its ordered key's line, the next job's turn comes (written here). */
  private leaveLine(after: JobRecord, now: Micros): void {
    if (after.orderKey === null) return;
    const slot = orderSlot(after.tenant, after.orderKey);
    const line = this.lines.get(slot);
    const i = line?.ids.indexOf(after.jobId) ?? -1;
    if (line === undefined || !leavesLine(i >= 0, after)) return;
    line.ids.splice(i, 1);
    this.takeTurn(slot, after.jobId, now);
  }

  /** Promote the first job of `slot`'s line if it waits; forget the line when it is empty. */
  private takeTurn(slot: string, after: string | null, now: Micros): JobRecord | null {
    const line = this.lines.get(slot);
    const firstId = line?.ids[0];
    if (line === undefined || firstId === undefined) {
      this.lines.delete(slot);
      return null;
    }
    const promoted = nextTurn(this.jobs.get(firstId) ?? null, after, now);
    if (promoted !== null) {
      this.jobs.set(promoted.jobId, promoted);
      this.appendLog(promoted);
    }
    return promoted;
  }

  blockedKeys(filter: ScopeFilter, limit: number): Promise<BlockedKey[]> {
    return Promise.resolve(blockedOf(this.lines.values(), (id) => this.jobs.get(id) ?? null, filter, limit));
  }

  releaseKey(scope: QueueScope, orderKey: string, now: Micros): Promise<JobRecord | null> {
    try {
      const tenant = scope.type === 'tenant' ? scope.tenant : null;
      const slot = orderSlot(tenant, orderKey);
      const line = this.lines.get(slot);
      const headId = line?.ids[0];
      if (line === undefined || headId === undefined) throw notFound(`order key ${orderKey}`);
      const head = this.jobs.get(headId) ?? null;
      if (!lineBlocked(head)) throw keyNotBlocked(orderKey);
      // A head gone (pruned) or Dead leaves; a waiting first job is the turn itself.
      if (head === null || !isWaiting(head)) line.ids.shift();
      return Promise.resolve(this.takeTurn(slot, head === null || isWaiting(head) ? null : head.jobId, now));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** `after` replaces `before`: if it finished while holding its supersede key, the key is free. */
  private releaseSupersedeKey(before: JobRecord, after: JobRecord): void {
    if (!releasesSupersedeKey(before, after)) return;
    const slot = supersedeSlot(after.tenant, after.supersedeKey ?? '');
    if (this.supersedeKeys.get(slot) === after.jobId) this.supersedeKeys.delete(slot);
  }

  importJobs(records: readonly JobRecord[]): Promise<ImportOutcome> {
    if (this.closed) return Promise.reject(storeClosed());
    let written = 0;
    for (const record of records) {
      const slot = record.idempotencyKey === null ? null : idempotencySlot(record.tenant, record.idempotencyKey);
      if (this.jobs.has(record.jobId) || (slot !== null && this.idempotency.has(slot))) continue;
      this.jobs.set(record.jobId, record);
      if (slot !== null) this.idempotency.set(slot, record.jobId);
      this.createdAt.observe(record.createdAt);
      written++;
    }
    return Promise.resolve({ written, skipped: records.length - written });
  }

  storedKeys(): Promise<StoredKeys> {
    const lines = [...this.lines.values()]
      .map(({ tenant, key, ids }) => ({ tenant, key, ids: ids.filter((id) => this.jobs.has(id)) }))
      .filter((line) => line.ids.length > 0);
    const holders = [...this.supersedeKeys.values()].flatMap((jobId) => {
      const record = this.jobs.get(jobId);
      // Only a live job holds its key: an entry a failed write left behind is no holder.
      return record?.supersedeKey == null || !holdsKeyIn(record.state)
        ? []
        : [{ tenant: record.tenant, key: record.supersedeKey, jobId }];
    });
    return Promise.resolve({ lines, holders });
  }

  importKeys(keys: StoredKeys): Promise<KeysImportOutcome> {
    if (this.closed) return Promise.reject(storeClosed());
    const inLine = new Set([...this.lines.values()].flatMap((line) => line.ids));
    const plan = planKeysImport(keys, {
      load: (id) => this.jobs.get(id) ?? null,
      inLine: (id) => inLine.has(id),
      keyHeld: (tenant, key) => this.supersedeKeys.has(supersedeSlot(tenant, key)),
    });
    for (const joining of plan.lines) this.joinLine(joining);
    for (const holder of plan.holders) {
      this.supersedeKeys.set(supersedeSlot(holder.tenant, holder.supersedeKey ?? ''), holder.jobId);
    }
    return Promise.resolve(plan.outcome);
  }

  claim(params: ClaimParams): Promise<JobRecord[]> {
    const ready = [...this.jobs.values()]
      .filter(
        (r) =>
          inScope(r, params.scope) &&
          isLeasable(r, params.now, params.kinds) &&
          !isRecordPaused(this.pauses.values(), r),
      )
      .sort(byKey);
    const leased = this.leasedByLane();
    const bucketOf = (lane: string): TokenBucket | null => this.buckets.get(lane) ?? null;
    const budget = new LaneBudget(this.limits.values(), (lane) => leased.get(lane) ?? 0, bucketOf, params.now);
    let chosen: JobRecord[];
    const fair = params.fair === true && params.scope.type === 'any';
    if (this.tenantLimits.size > 0) {
      const tenantLeased = this.leasedByTenant();
      const tenantBucketOf = (tenant: string): TokenBucket | null => this.tenantBuckets.get(tenant) ?? null;
      const tenants = new TenantBudget(
        this.tenantLimits.values(),
        (tenant) => tenantLeased.get(tenant) ?? 0,
        tenantBucketOf,
        params.now,
      );
      const candidates = ready.map((record) => ({
        record,
        scope: scopeHex(record),
        tenant: record.tenant,
        kind: record.kind,
      }));
      chosen = pickForTenants(candidates, params.limit, fair, budget, tenants, this.turns).map((c) => c.record);
      for (const [tenant, bucket] of tenants.spent(tenantBucketOf, params.now)) this.tenantBuckets.set(tenant, bucket);
    } else if (fair) {
      const picked = fairPick(
        ready.map((record) => ({ record, scope: scopeHex(record), system: record.tenant === null })),
        params.limit,
        this.fairCursor,
        (c) => budget.take(c.record.kind),
      );
      chosen = picked.chosen.map((c) => c.record);
      this.fairCursor = picked.cursor;
    } else {
      chosen = pickWithinLimits(ready, params.limit, budget);
    }
    for (const [lane, bucket] of budget.spent(bucketOf, params.now)) this.buckets.set(lane, bucket);
    return Promise.resolve(
      chosen.map((record) => {
        const leased = params.lease(record);
        this.jobs.set(leased.jobId, leased);
        this.appendLog(leased);
        return leased;
      }),
    );
  }

  /** Leased jobs per lane, counted from the records: the plain way, for the reference. */
  private leasedByLane(): Map<string, number> {
    const counts = new Map<string, number>();
    if (this.limits.size === 0) return counts;
    for (const r of this.jobs.values()) {
      if (r.state !== JobState.Leased) continue;
      const lane = limitLane(this.limits.values(), r.kind);
      if (lane !== null) counts.set(lane, (counts.get(lane) ?? 0) + 1);
    }
    return counts;
  }

  /** Leased jobs per limited tenant, counted from the records. */
  private leasedByTenant(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const r of this.jobs.values()) {
      if (r.state !== JobState.Leased || r.tenant === null || !this.tenantLimits.has(r.tenant)) continue;
      counts.set(r.tenant, (counts.get(r.tenant) ?? 0) + 1);
    }
    return counts;
  }

  // ---- tenant limits ----

  setTenantLimit(limit: TenantLimit, maxTotal: number): Promise<TenantLimit> {
    try {
      admitTenantLimit([...this.tenantLimits.values()], limit, maxTotal);
      this.tenantLimits.set(limit.tenant, limit);
      if (limit.rate === null) this.tenantBuckets.delete(limit.tenant);
      return Promise.resolve(limit);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  clearTenantLimit(tenant: string): Promise<boolean> {
    this.tenantBuckets.delete(tenant);
    return Promise.resolve(this.tenantLimits.delete(tenant));
  }

  listTenantLimits(now: Micros): Promise<TenantLimitStatus[]> {
    const leased = this.leasedByTenant();
    return Promise.resolve(
      [...this.tenantLimits.values()]
        .sort(compareTenantLimits)
        .map((l) => tenantLimitStatus(l, leased.get(l.tenant) ?? 0, this.tenantBuckets.get(l.tenant) ?? null, now)),
    );
  }

  // ---- kind limits ----

  setKindLimit(limit: KindLimit, maxTotal: number): Promise<KindLimit> {
    try {
      admitKindLimit([...this.limits.values()], limit, maxTotal);
      this.limits.set(limit.kindPrefix, limit);
      if (limit.rate === null) this.buckets.delete(limit.kindPrefix);
      return Promise.resolve(limit);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  clearKindLimit(kindPrefix: string): Promise<boolean> {
    this.buckets.delete(kindPrefix);
    return Promise.resolve(this.limits.delete(kindPrefix));
  }

  listKindLimits(now: Micros): Promise<KindLimitStatus[]> {
    const leased = this.leasedByLane();
    return Promise.resolve(
      [...this.limits.values()]
        .sort(compareKindLimits)
        .map((l) => limitStatus(l, leased.get(l.kindPrefix) ?? 0, this.buckets.get(l.kindPrefix) ?? null, now)),
    );
  }

  pauseKinds(pause: Pause, bounds: PauseBounds): Promise<Pause> {
    try {
      const existing = admitPause([...this.pauses.values()], pause, bounds);
      if (existing !== null) return Promise.resolve(existing);
      this.pauses.set(pauseKey(pause.scope, pause.kindPrefix), pause);
      return Promise.resolve(pause);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  resumeKinds(scope: PauseScope, kindPrefix: string): Promise<boolean> {
    return Promise.resolve(this.pauses.delete(pauseKey(scope, kindPrefix)));
  }

  listPauses(filter: ScopeFilter): Promise<Pause[]> {
    return Promise.resolve([...this.pauses.values()].filter((p) => pauseInFilter(p, filter)).sort(comparePauses));
  }

  update(jobId: string, change: (current: JobRecord) => Change, now: Micros): Promise<UpdateOutcome> {
    try {
      const current = this.jobs.get(jobId);
      if (current === undefined) throw notFound(`job ${jobId}`);
      const next = change(current);
      this.jobs.set(jobId, next.record);
      this.releaseSupersedeKey(current, next.record);
      this.appendLog(next.record);
      this.leaveLine(next.record, now);
      const successors = next.successors ? this.insertNow(next.successors, now, new Map()) : [];
      return Promise.resolve({ record: next.record, successors });
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  updateMany(items: readonly UpdateItem[], now: Micros): Promise<ItemResult<JobRecord>[]> {
    return Promise.resolve(
      items.map((item) => {
        try {
          const current = this.jobs.get(item.jobId);
          if (current === undefined) throw notFound(`job ${item.jobId}`);
          const { record } = item.change(current);
          this.jobs.set(item.jobId, record);
          this.releaseSupersedeKey(current, record);
          this.appendLog(record);
          this.leaveLine(record, now);
          return itemOk(record);
        } catch (error) {
          return itemFailed<JobRecord>(error);
        }
      }),
    );
  }

  expiredLeases(now: Micros, limit: number): Promise<string[]> {
    const expired = [...this.jobs.values()]
      .filter((r) => isLeaseExpired(r, now))
      .sort((a, b) => (a.leaseDeadline ?? 0) - (b.leaseDeadline ?? 0) || a.jobId.localeCompare(b.jobId))
      .slice(0, limit);
    return Promise.resolve(expired.map((r) => r.jobId));
  }

  leased(scope: ScopeFilter, workerId: string | null, limit: number): Promise<JobRecord[]> {
    const rows = [...this.jobs.values()]
      .filter((r) => r.state === JobState.Leased && inScope(r, scope) && (workerId === null || r.workerId === workerId))
      .sort(byKey)
      .slice(0, limit);
    return Promise.resolve(rows);
  }

  prune(params: PruneParams): Promise<number> {
    const doomed = [...this.jobs.values()]
      .filter((r) => r.state === params.state && (finishedAt(r) ?? Infinity) < params.finishedBefore)
      .sort((a, b) => (finishedAt(a) ?? 0) - (finishedAt(b) ?? 0) || a.jobId.localeCompare(b.jobId))
      .slice(0, params.limit);
    for (const record of doomed) {
      this.jobs.delete(record.jobId);
      if (record.idempotencyKey !== null) {
        this.idempotency.delete(idempotencySlot(record.tenant, record.idempotencyKey));
      }
    }
    return Promise.resolve(doomed.length);
  }

  get(jobId: string): Promise<JobRecord | null> {
    return Promise.resolve(this.jobs.get(jobId) ?? null);
  }

  list(query: ListQuery): Promise<ListPage> {
    const after = query.pageToken === null ? null : pageTokenPosition(query.pageToken);
    const rows = [...this.jobs.values()]
      .filter(
        (r) =>
          inScope(r, query.scope) &&
          (query.includeSystem || query.scope.type !== 'any' || r.tenant !== null) &&
          (query.state === null || r.state === query.state) &&
          (query.kindPrefix === null || kindMatches(r.kind, [query.kindPrefix])) &&
          listedAfter(r, after, query.order),
      )
      .sort((a, b) => compareListed(a, b, query.order));
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return Promise.resolve({
      jobs: page,
      nextPageToken: rows.length > query.limit && last ? pageTokenAfter(last) : null,
    });
  }

  counts(scope: ScopeFilter): Promise<CountRow[]> {
    const totals = new Map<string, CountRow>();
    for (const r of this.jobs.values()) {
      if (!inScope(r, scope)) continue;
      const slot = `${r.state}\u0000${r.kind}`;
      const row = totals.get(slot);
      totals.set(slot, { state: r.state, kind: r.kind, count: (row?.count ?? 0) + 1 });
    }
    return Promise.resolve([...totals.values()].sort((a, b) => a.state - b.state || (a.kind < b.kind ? -1 : 1)));
  }

  // ---- the transitions log ----

  private appendLog(record: JobRecord): void {
    const entry = this.logging ? logEntryOf(record) : null;
    if (entry !== null) this.log.push(entry);
  }

  private position(seq: number): string {
    return formatPosition(LOG_FORMAT, this.logId, [seq]);
  }

  logHead(): Promise<string> {
    return Promise.resolve(this.position(this.logFirst + this.log.length - 1));
  }

  readLog(after: string, limit: number, filter: LogFilter): Promise<LogPage> {
    try {
      const [seen] = parsePosition(after, LOG_FORMAT, this.logId, 1);
      const last = this.logFirst + this.log.length - 1;
      const from = Number(seen);
      if (from > last) throw invalidArgument('resume_token', 'a position this store has not reached');
      if (from + 1 < this.logFirst) throw positionPruned();
      const entries: LogEntry[] = [];
      let seq = from;
      while (seq < last && entries.length < limit) {
        seq++;
        const job = this.log[seq - this.logFirst] as LogRecord;
        if (logMatches(job, filter)) entries.push({ position: this.position(seq), seq, job });
      }
      return Promise.resolve({ entries, position: this.position(seq) });
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  pruneLog(params: LogPruneParams): Promise<number> {
    let pruned = 0;
    while (pruned < params.limit) {
      const oldest = this.log[0];
      if (oldest === undefined || !logEntryExpired(transitionOf(oldest).at, this.log.length - 1, params)) break;
      this.log.shift();
      this.logFirst++;
      pruned++;
    }
    return Promise.resolve(pruned);
  }

  nextGateAt(scope: ScopeFilter, now: Micros): Promise<Micros | null> {
    let earliest: Micros | null = null;
    const leased = this.leasedByLane();
    const tenantLeased = this.leasedByTenant();
    for (const r of this.jobs.values()) {
      if (r.state !== JobState.Pending || !inScope(r, scope)) continue;
      let at: Micros | null = null;
      if (r.notBefore !== null && r.notBefore > now) at = r.notBefore;
      else if (!isRecordPaused(this.pauses.values(), r)) {
        at = earlier(this.tokenDueFor(r.kind, leased, now), this.tenantTokenDue(r.tenant, tenantLeased, now));
      }
      if (at !== null && (earliest === null || at < earliest)) earliest = at;
    }
    return Promise.resolve(earliest);
  }

  /** When a ready job of `kind` waits for its lane's next token (its lane out of tokens, not full); else `null`. */
  private tokenDueFor(kind: string, leased: ReadonlyMap<string, number>, now: Micros): Micros | null {
    const lane = limitLane(this.limits.values(), kind);
    const limit = lane === null ? undefined : this.limits.get(lane);
    if (limit === undefined) return null;
    return laneTokenDue(limit, leased.get(limit.kindPrefix) ?? 0, this.buckets.get(limit.kindPrefix) ?? null, now);
  }

  /** When a ready job of `tenant` waits for its tenant's next token (out of tokens, not full); else `null`. */
  private tenantTokenDue(tenant: string | null, leased: ReadonlyMap<string, number>, now: Micros): Micros | null {
    const limit = tenant === null ? undefined : this.tenantLimits.get(tenant);
    if (limit === undefined) return null;
    return laneTokenDue(limit, leased.get(limit.tenant) ?? 0, this.tenantBuckets.get(limit.tenant) ?? null, now);
  }

  // ---- schedules ----

  createSchedule(schedule: Schedule, maxPerScope: number): Promise<void> {
    const slot = scheduleSlot(schedule.scope, schedule.name);
    if (this.schedules.has(slot)) return Promise.reject(scheduleExists(schedule.name));
    const prefix = scheduleSortKey({ scope: schedule.scope, name: '' }).toString('hex');
    let inScope = 0;
    for (const key of this.schedules.keys()) if (key.startsWith(prefix)) inScope++;
    if (inScope >= maxPerScope) return Promise.reject(tooManySchedules(maxPerScope));
    this.schedules.set(slot, schedule);
    return Promise.resolve();
  }

  updateSchedule(scope: QueueScope, name: string, change: (current: Schedule) => Schedule): Promise<Schedule> {
    try {
      const slot = scheduleSlot(scope, name);
      const current = this.schedules.get(slot);
      if (current === undefined) throw notFound(`schedule ${name}`);
      const next = change(current);
      this.schedules.set(slot, next);
      return Promise.resolve(next);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  getSchedule(scope: QueueScope, name: string): Promise<Schedule | null> {
    return Promise.resolve(this.schedules.get(scheduleSlot(scope, name)) ?? null);
  }

  listSchedules(query: ScheduleQuery): Promise<SchedulePage> {
    const after = query.pageToken === null ? null : schedulePageKey(query.pageToken).toString('hex');
    const rows = [...this.schedules.entries()]
      .filter(([key, s]) => scheduleInScope(s, query.scope) && (after === null || key > after))
      .sort(([a], [b]) => (a < b ? -1 : 1));
    const page = rows.slice(0, query.limit).map(([, s]) => s);
    const last = page[page.length - 1];
    return Promise.resolve({
      schedules: page,
      nextPageToken: rows.length > query.limit && last ? schedulePageToken(last) : null,
    });
  }

  deleteSchedule(scope: QueueScope, name: string): Promise<boolean> {
    return Promise.resolve(this.schedules.delete(scheduleSlot(scope, name)));
  }

  fireDueSchedules(
    now: Micros,
    limit: number,
    fire: (schedule: Schedule) => ScheduleFiring | null,
  ): Promise<FiredSchedule[]> {
    try {
      const due = [...this.schedules.entries()]
        .filter(([, s]) => !s.paused && s.nextDueAt !== null && s.nextDueAt <= now)
        .sort(([ka, a], [kb, b]) => (a.nextDueAt ?? 0) - (b.nextDueAt ?? 0) || (ka < kb ? -1 : 1))
        .slice(0, limit);
      const fired: FiredSchedule[] = [];
      for (const [slot, schedule] of due) {
        const firing = fire(schedule);
        if (firing === null) continue;
        const [job] = this.insertNow([firing.draft], now, new Map());
        this.schedules.set(slot, firing.next);
        fired.push({ schedule: firing.next, job: job as InsertOutcome });
      }
      return Promise.resolve(fired);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Ready until closed: it is memory in this process. */
  health(): Promise<void> {
    return this.closed ? Promise.reject(storeClosed()) : Promise.resolve();
  }

  stats(): StoreStats {
    return { corruptRows: 0 };
  }

  metrics(): Promise<StoreMetrics> {
    let oldestPendingAt: Micros | null = null;
    for (const r of this.jobs.values()) {
      if (r.state === JobState.Pending && (oldestPendingAt === null || r.createdAt < oldestPendingAt))
        oldestPendingAt = r.createdAt;
    }
    return Promise.resolve({ oldestPendingAt });
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

function scheduleSlot(scope: QueueScope, name: string): string {
  return scheduleSortKey({ scope, name }).toString('hex');
}
