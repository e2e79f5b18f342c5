/**
 * The embedded backend: jobs in RocksDB, one process owning the directory.
 *
 * Column families:
 *  - `jobs`:        58-byte job key → `[version][msgpack JobRecord]` (docs/design.md)
 *  - `ids`:         job id → current job key (the key moves with every state change)
 *  - `idempotency`: `[scope][key]` → job id
 *  - `supersede`:   `[scope][key]` → the id of the job holding a supersede key (`supersede.ts`)
 *  - `finished`:    `[state][finished_at][job id]` → job key, what retention prunes
 *  - `counts`:      `[scope][state][kind]` → number of jobs
 *  - `transitions`: the transitions log (`core/transitions-log.ts`): `[seq u64]` → the entry
 *                   (`[version][msgpack JobRecord]`, trimmed), written in the batch of its transition
 *  - `default`:     store metadata (the `created_at` high-water mark), schedules with
 *                   their due index (`codec/schedules.ts`), pauses (`codec/pauses.ts`) and
 *                   kind limits (`codec/kind-limits.ts`), both also held in memory and in the
 *                   live index, which claims consult
 *
 * Every transition stages all its row and index changes as one unit; the group
 * committer writes the units of one event-loop turn as one atomic write batch.
 * Live jobs are also held in a {@link LiveIndex} so leasing and reaping never
 * scan the LSM (see that file for why).
 *
 * This class holds the jobs' write path, the live index and the reads; the other concerns are
 * parts it wires, each receiving one `RocksContext`: `controls.ts` (pauses and kind limits),
 * `schedules.ts`, `log.ts` (the transitions log), `prune.ts` (retention) and `columns.ts` (the
 * column families); `live-records.ts` keeps the records held beside the index, `counters.ts`
 * the job counters.
 */
import { systemClock, type Clock } from '../../core/clock.ts';
import { randomBytes } from 'node:crypto';
import { notFound, storeClosed } from '../../core/errors.ts';
import { type LogFilter, type LogPage, type LogPruneParams } from '../../core/transitions-log.ts';
import { type Pause, type PauseBounds, type PauseScope } from '../../core/pauses.ts';
import { type KindLimit, type KindLimitStatus } from '../../core/kind-limits.ts';
import type { TenantLimit, TenantLimitStatus } from '../../core/tenant-limits.ts';
import { type Schedule, type ScheduleFiring } from '../../core/schedules.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import { enqueue, isLeasable } from '../../core/transitions.ts';
import { withCreatedAt } from '../../core/drafts.ts';
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
import {
  encodeU64,
  finishedIndexKey,
  idempotencyIndexKey,
  idIndexKey,
  jobIdFromBytes,
  jobKeyOf,
  prefixUpperBound,
  readU64,
  scopeBytes,
  scopeOfTenant,
  SCOPE_BYTES,
  stateRangePrefix,
} from '../../codec/keys.ts';
import { decodeRecord, encodeWrite } from '../../codec/value.ts';
import { idempotencySlot, inScope } from '../../core/scope.ts';
import { planSupersede, supersededOutcomes } from '../supersede-plan.ts';
import { SupersedeKeys } from './supersede.ts';
import { OrderLines } from './ordered-keys.ts';
import { blockedOf, LineJoins, nextTurn } from '../order-plan.ts';
import { isWaiting, keyNotBlocked, lineBlocked, staysInLine, type BlockedKey } from '../../core/ordered-keys.ts';
import { holdsKeyIn } from '../../core/supersede.ts';
import { CreatedAtSequence } from '../shared.ts';
import { planKeysImport } from '../stored-keys.ts';
import type {
  BackupSummary,
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
import {
  COLUMN_TUNING,
  COLUMNS,
  META_LAST_CREATED_AT,
  META_LOG_ID,
  META_LOG_PRUNED,
  openColumns,
  type Columns,
} from './columns.ts';
import { latin1, RocksContext } from './context.ts';
import { writeBackup } from './backup.ts';
import { Controls } from './controls.ts';
import { TenantLimits } from './tenant-limits.ts';
import { RocksDatabase, type WriteOp } from './database.ts';
import { TransitionsLog, type LogState } from './log.ts';
import { listInOrder } from './listing.ts';
import { Schedules } from './schedules.ts';
import { GroupCommit } from './group-commit.ts';
import { KeyedLock } from './keyed-lock.ts';
import { LiveIndex, type PendingEntry, type ScopePrefix } from './live-index.ts';
import { LiveRecords, type Loaded } from './live-records.ts';
import { Counters, type CountChange } from './counters.ts';
import { pruneFinished } from './prune.ts';

export interface RocksStoreOptions {
  /** Directory of the store; created if missing. */
  readonly path: string;
  /** `fsync` syncs the WAL before acknowledging a write; `process` (default) survives a process kill, not an OS crash. */
  readonly durability?: 'process' | 'fsync';
  readonly logger?: Logger;
  /** Decides, at open, which Pending jobs are still behind their backoff gate. */
  readonly clock?: Clock;
  /** Memory for cached Pending records (default 64 MiB); tests shrink it to fill it. */
  readonly pendingCacheBytes?: number;
  /** Append to the transitions log (Watch reads it). Default `true`; `watch.enabled`. */
  readonly transitionsLog?: boolean;
  /** Write big batches on a thread of their own (`storage.write_thread`); default `false`. */
  readonly writeThread?: boolean;
  /** The smallest batch the write thread takes (default `WRITE_THREAD_MIN_OPS`); tests pass 0. */
  readonly writeThreadMinOps?: number;
}

/** Memory for cached Pending records (`LiveRecords`) by default; one record may take at most 1/64 of it. */
const PENDING_CACHE_BYTES = 64 * 1024 * 1024;
/** A job whose ordered key's turn came (`stageTurn`): as it was, as staged, and its lock's release. */
interface Turn {
  readonly before: JobRecord;
  readonly after: Loaded;
  readonly release: () => void;
}

function scopePrefixOf(scope: ScopeFilter): ScopePrefix {
  return scope.type === 'any' ? null : latin1(scopeBytes(scope));
}

export class RocksJobStore implements JobStore {
  readonly backend = 'rocksdb';
  private readonly index = new LiveIndex();
  /** The fair order's cursor: the scope (latin1) of the tenant a fair claim served last. */
  private fairCursor: string | null = null;
  /** The records of Leased jobs, and of recent Pending ones, held beside the index. */
  private readonly records: LiveRecords;
  private readonly locks = new KeyedLock();
  private readonly counters: Counters;
  private readonly committer: GroupCommit;
  private readonly pruneCursor = new Map<JobState, Buffer>();
  private createdAtDirty = false;
  private readonly ctx: RocksContext;
  private readonly log: TransitionsLog;
  private readonly controls: Controls;
  private readonly tenantLimits: TenantLimits;
  private readonly schedules: Schedules;
  private readonly supersedeKeys: SupersedeKeys;
  private readonly orderLines: OrderLines;

  private constructor(
    private readonly db: RocksDatabase,
    private readonly cf: Columns,
    private readonly createdAt: CreatedAtSequence,
    durability: 'process' | 'fsync',
    logger: Logger,
    pendingCacheBytes: number,
    logState: LogState,
    /** Times a backup (`backup`). */
    private readonly clock: Clock,
  ) {
    this.records = new LiveRecords(this.index, pendingCacheBytes);
    this.counters = new Counters(db, cf.counts);
    this.committer = new GroupCommit(
      db,
      durability === 'fsync',
      () => this.summaryOps(),
      (ops) => this.log.landed(ops),
    );
    this.ctx = new RocksContext(db, cf, this.locks, this.committer, this.index, logger);
    this.log = new TransitionsLog(this.ctx, logState);
    this.controls = new Controls(this.ctx);
    this.tenantLimits = new TenantLimits(this.ctx);
    this.schedules = new Schedules(this.ctx, (draft, now, more) => this.insertWith(draft, now, more));
    this.supersedeKeys = new SupersedeKeys(db, cf.supersede);
    this.orderLines = new OrderLines(db, cf.order);
  }

  static async open(options: RocksStoreOptions): Promise<RocksJobStore> {
    const db = await RocksDatabase.open(options.path, COLUMNS, COLUMN_TUNING);
    const cf = openColumns(db);
    const last = await db.get(cf.meta, META_LAST_CREATED_AT);
    let logId = (await db.get(cf.meta, META_LOG_ID))?.toString('latin1');
    if (logId === undefined) {
      logId = randomBytes(6).toString('hex');
      db.write([{ column: cf.meta, key: META_LOG_ID, value: Buffer.from(logId, 'latin1') }], true);
    }
    const pruned = await db.get(cf.meta, META_LOG_PRUNED);
    const lastLogKey = await db.lastKey(cf.log);
    const logPruned = pruned ? readU64(pruned, 0) : 0;
    const store = new RocksJobStore(
      db,
      cf,
      new CreatedAtSequence(last ? readU64(last, 0) : 0),
      options.durability ?? 'process',
      options.logger ?? silentLogger,
      options.pendingCacheBytes ?? PENDING_CACHE_BYTES,
      {
        id: logId,
        last: Math.max(logPruned, lastLogKey ? readU64(lastLogKey, 0) : 0),
        pruned: logPruned,
        enabled: options.transitionsLog ?? true,
      },
      options.clock ?? systemClock,
    );
    if (options.writeThread === true) await db.startWriteThread(options.writeThreadMinOps);
    await store.controls.load();
    await store.tenantLimits.load();
    await store.supersedeKeys.load();
    await store.orderLines.load();
    await store.rebuild((options.clock ?? systemClock).now());
    return store;
  }

  // ---- pauses and kind limits ----

  setKindLimit(limit: KindLimit, maxTotal: number): Promise<KindLimit> {
    return this.controls.setKindLimit(limit, maxTotal);
  }

  clearKindLimit(kindPrefix: string): Promise<boolean> {
    return this.controls.clearKindLimit(kindPrefix);
  }

  listKindLimits(now: Micros): Promise<KindLimitStatus[]> {
    return this.controls.listKindLimits(now);
  }

  setTenantLimit(limit: TenantLimit, maxTotal: number): Promise<TenantLimit> {
    return this.tenantLimits.set(limit, maxTotal);
  }

  clearTenantLimit(tenant: string): Promise<boolean> {
    return this.tenantLimits.clear(tenant);
  }

  listTenantLimits(now: Micros): Promise<TenantLimitStatus[]> {
    return this.tenantLimits.list(now);
  }

  pauseKinds(pause: Pause, bounds: PauseBounds): Promise<Pause> {
    return this.controls.pauseKinds(pause, bounds);
  }

  // ---- ordered keys (core/ordered-keys.ts, ordered-keys.ts) ----

  blockedKeys(filter: ScopeFilter, limit: number): Promise<BlockedKey[]> {
    this.assertOpen();
    return Promise.resolve(blockedOf(this.orderLines.entries(), (id) => this.load(id)?.record ?? null, filter, limit));
  }

  async releaseKey(scope: QueueScope, orderKey: string, now: Micros): Promise<JobRecord | null> {
    this.assertOpen();
    const slot = this.orderLines.slot(scope.type === 'tenant' ? scope.tenant : null, orderKey);
    for (;;) {
      const headId = this.orderLines.first(slot);
      if (headId === undefined) throw notFound(`order key ${orderKey}`);
      const release = await this.locks.acquire([headId]);
      let turn: Turn | null = null;
      try {
        if (this.orderLines.first(slot) !== headId) continue;
        const head = this.load(headId)?.record ?? null;
        if (!lineBlocked(head)) throw keyNotBlocked(orderKey);
        const ops: WriteOp[] = [];
        const counts: CountChange[] = [];
        // A Dead or gone head leaves; a waiting first job is the turn itself (its lock is held).
        const waiting = head !== null && isWaiting(head);
        if (!waiting) this.orderLines.leave(ops, headId);
        turn = await this.stageTurn(ops, counts, slot, waiting ? null : headId, now, new Set([headId]));
        await this.stageUnit(ops, counts);
        this.indexTurn(turn, now);
        return turn?.after.record ?? null;
      } finally {
        turn?.release();
        release();
      }
    }
  }

  /**
   * Stage the next job's turn in the line at `slot` after `after` left it: when the line's first
   * job waits, it is promoted, its lock taken here (unless `held` has it) and kept until the
   * caller's write is made. Looked at without its lock first: a job that is not waiting is never
   * locked here, so two lines' writers never wait for each other.
   */
  private async stageTurn(
    ops: WriteOp[],
    counts: CountChange[],
    slot: string,
    after: string | null,
    now: Micros,
    held: ReadonlySet<string>,
  ): Promise<Turn | null> {
    for (;;) {
      const firstId = this.orderLines.first(slot);
      const peek = firstId === undefined ? null : this.load(firstId);
      if (firstId === undefined || peek === null || !isWaiting(peek.record)) return null;
      const release = held.has(firstId) ? () => {} : await this.locks.acquire([firstId]);
      const first = this.orderLines.first(slot) === firstId ? this.load(firstId) : null;
      const promoted = first === null ? null : nextTurn(first.record, after, now);
      if (first === null || promoted === null) {
        release();
        if (this.orderLines.first(slot) !== firstId) continue;
        return null;
      }
      const key = jobKeyOf(promoted);
      this.stageTransition(ops, counts, first.key, first.record, key, promoted);
      return { before: first.record, after: { key, record: promoted }, release };
    }
  }

  /** Index a promoted job once its write is made. */
  private indexTurn(turn: Turn | null, now: Micros): void {
    if (turn === null) return;
    this.records.unindex(turn.before);
    this.records.indexWritten(turn.after.key, turn.after.record, now);
  }

  resumeKinds(scope: PauseScope, kindPrefix: string): Promise<boolean> {
    return this.controls.resumeKinds(scope, kindPrefix);
  }

  listPauses(filter: ScopeFilter): Promise<Pause[]> {
    return this.controls.listPauses(filter);
  }

  /** Load counters and index every Pending and Leased row, seeking from scope to scope so finished rows are never read. */
  private async rebuild(now: Micros): Promise<void> {
    await this.counters.load();
    let from: Buffer | null = Buffer.alloc(1);
    while (from !== null) {
      const first = await this.db.firstKey(this.cf.jobs, from);
      if (first === null) break;
      const scope = first.subarray(0, SCOPE_BYTES);
      const live = { gte: stateRangePrefix(scope, JobState.Pending), lt: stateRangePrefix(scope, JobState.Completed) };
      for await (const [key, value] of this.db.scan(this.cf.jobs, live, 1024)) {
        const record = this.ctx.decodeOrSkip(key, value);
        if (record !== null) this.records.indexLive(key, record, now);
      }
      from = prefixUpperBound(scope);
    }
  }

  /** Cached Pending records and their estimated bytes, for tests and metrics. */
  get pendingCache(): { records: number; bytes: number } {
    return this.records.pendingCache;
  }

  // ---- writes ----

  async importJobs(records: readonly JobRecord[], now: Micros): Promise<ImportOutcome> {
    this.assertOpen();
    const slots = records.map((r) =>
      r.idempotencyKey === null ? null : idempotencyIndexKey(scopeOfTenant(r.tenant), r.idempotencyKey),
    );
    const release = await this.locks.acquire([
      ...records.map((r) => r.jobId),
      ...idempotencyLocks(records.map((r) => ({ tenant: r.tenant, idempotencyKey: r.idempotencyKey }))),
    ]);
    try {
      const held = this.db.getManySync(
        this.cf.ids,
        records.map((r) => idIndexKey(r.jobId)),
      );
      const taken = this.db.getManySync(
        this.cf.idempotency,
        slots.filter((k): k is Buffer => k !== null),
      );
      const takenSlots = new Set<string>();
      slots
        .filter((k): k is Buffer => k !== null)
        .forEach((k, i) => taken[i] !== undefined && takenSlots.add(latin1(k)));
      const ops: WriteOp[] = [];
      const counts: CountChange[] = [];
      const written: Loaded[] = [];
      const seen = new Set<string>();
      for (const [i, record] of records.entries()) {
        const slot = slots[i] ?? null;
        if (held[i] !== undefined || seen.has(record.jobId) || (slot !== null && takenSlots.has(latin1(slot))))
          continue;
        seen.add(record.jobId);
        if (slot !== null) takenSlots.add(latin1(slot));
        const key = jobKeyOf(record);
        ops.push(
          { column: this.cf.jobs, key, value: encodeWrite(record, false).value },
          { column: this.cf.ids, key: idIndexKey(record.jobId), value: key },
        );
        if (slot !== null) ops.push({ column: this.cf.idempotency, key: slot, value: idIndexKey(record.jobId) });
        const finished = finishedAt(record);
        if (finished !== null) {
          ops.push({
            column: this.cf.finished,
            key: finishedIndexKey(record.state, finished, record.jobId),
            value: key,
          });
        }
        counts.push([record, +1]);
        this.createdAt.observe(record.createdAt);
        this.createdAtDirty = true;
        written.push({ key, record });
      }
      await this.stageUnit(ops, counts);
      for (const { key, record } of written) this.records.indexLive(key, record, now);
      return { written: written.length, skipped: records.length - written.length };
    } finally {
      release();
    }
  }

  storedKeys(): Promise<StoredKeys> {
    this.assertOpen();
    const held = (id: string): boolean => this.load(id) !== null;
    const lines = [...this.orderLines.entries()]
      .map((line) => ({ ...line, ids: line.ids.filter(held) }))
      .filter((line) => line.ids.length > 0);
    const holders = [...this.supersedeKeys.holderIds()].flatMap((jobId) => {
      const record = this.load(jobId)?.record;
      // Only a live job holds its key: an entry a failed write left behind is no holder.
      return record?.supersedeKey == null || !holdsKeyIn(record.state)
        ? []
        : [{ tenant: record.tenant, key: record.supersedeKey, jobId }];
    });
    return Promise.resolve({ lines, holders });
  }

  async importKeys(keys: StoredKeys): Promise<KeysImportOutcome> {
    this.assertOpen();
    const release = await this.locks.acquire([
      ...keys.lines.flatMap((line) => line.ids),
      ...keys.holders.flatMap((h) => [h.jobId, this.supersedeKeys.keyLock(h.tenant, h.key)]),
    ]);
    try {
      const plan = planKeysImport(keys, {
        load: (id) => this.load(id)?.record ?? null,
        inLine: (id) => this.orderLines.has(id),
        keyHeld: (tenant, key) => this.supersedeKeys.holderOf(tenant, key) !== undefined,
      });
      const ops: WriteOp[] = [];
      for (const record of plan.lines.flat()) this.orderLines.join(ops, record);
      for (const record of plan.holders) this.supersedeKeys.take(ops, record);
      await this.stageUnit(ops, []);
      return plan.outcome;
    } finally {
      release();
    }
  }

  backup(target: string): Promise<BackupSummary> {
    this.assertOpen();
    return writeBackup(this.db, this.committer, target, this.clock);
  }

  async insert(drafts: readonly JobDraft[], now: Micros): Promise<InsertOutcome[]> {
    this.assertOpen();
    const release = await this.lockInsert(drafts);
    try {
      const ops: WriteOp[] = [];
      const counts: CountChange[] = [];
      const { outcomes, superseded } = this.planInsert(drafts, now, ops, counts);
      await this.stageUnit(ops, counts);
      this.indexCreated(outcomes, superseded, now);
      return outcomes;
    } finally {
      release();
    }
  }

  /**
   * The locks an insert of `drafts` takes: their idempotency keys, their supersede keys and those
   * keys' holders (`SupersedeKeys.locksFor`), taken again if a holder changed while it waited.
   * `held` is a job the caller holds locked already.
   */
  private async lockInsert(drafts: readonly JobDraft[], held?: string): Promise<() => void> {
    for (;;) {
      const { names, snapshot } = this.supersedeKeys.locksFor(drafts, held);
      const idempotent = idempotencyLocks(drafts);
      const release = await this.locks.acquire(names.length === 0 ? idempotent : [...idempotent, ...names]);
      if (this.supersedeKeys.unchanged(snapshot)) return release;
      release();
    }
  }

  /**
   * Build the ops for new jobs; the caller holds their locks (`lockInsert`). `updated` is a job
   * changed in the same write (chained enqueue): a draft whose key names it must see it as
   * changed, not as stored. `superseded` are the stored holders the drafts cancel, as they were
   * and as they are now, for the caller to index once the write is made.
   */
  private planInsert(
    drafts: readonly JobDraft[],
    now: Micros,
    ops: WriteOp[],
    counts: CountChange[],
    updated?: JobRecord,
  ): { outcomes: InsertOutcome[]; superseded: { before: JobRecord; after: Loaded }[] } {
    const idemKeys = drafts.map((d) =>
      d.idempotencyKey === null ? null : idempotencyIndexKey(scopeOfTenant(d.tenant), d.idempotencyKey),
    );
    const present = idemKeys.filter((k): k is Buffer => k !== null);
    const found = this.db.getManySync(this.cf.idempotency, present);
    const existingIds = new Map<string, string>();
    present.forEach((k, i) => {
      const id = found[i];
      if (id !== undefined) existingIds.set(latin1(k), jobIdFromBytes(id));
    });
    const staged = new Map<string, JobRecord>();
    const joins = new LineJoins((tenant, key) => this.orderLines.occupied(tenant, key));
    const outcomes: InsertOutcome[] = [];
    /** The job each draft creates, `null` for an idempotent repeat. */
    const records: (JobRecord | null)[] = [];
    let keyed = false;
    for (const [i, draft] of drafts.entries()) {
      const idemKey = idemKeys[i] ?? null;
      if (idemKey !== null) {
        const slot = latin1(idemKey);
        const existingId = existingIds.get(slot);
        const existing =
          staged.get(slot) ??
          (existingId === undefined
            ? null
            : existingId === updated?.jobId
              ? updated
              : (this.load(existingId)?.record ?? null));
        if (existing !== null) {
          outcomes.push({ record: existing, created: false });
          records.push(null);
          continue;
        }
      }
      const record = joins.place(enqueue(withCreatedAt(draft, this.createdAt.next(now)), now));
      this.createdAtDirty = true;
      if (idemKey !== null) staged.set(latin1(idemKey), record);
      if (record.supersedeKey !== null) keyed = true;
      outcomes.push({ record, created: true });
      records.push(record);
    }
    const superseded: { before: JobRecord; after: Loaded }[] = [];
    let planned = outcomes;
    if (keyed) {
      const loaded = new Map<string, Loaded>();
      const plan = planSupersede(
        drafts,
        records,
        (draft) => {
          const id = this.supersedeKeys.holderOf(draft.tenant, draft.supersedeKey);
          if (id === undefined) return null;
          if (id === updated?.jobId) return updated;
          const holder = this.load(id);
          if (holder !== null) loaded.set(id, holder);
          return holder?.record ?? null;
        },
        now,
      );
      for (const after of plan.cancelled) {
        const before = loaded.get(after.jobId) as Loaded;
        const key = jobKeyOf(after);
        this.stageTransition(ops, counts, before.key, before.record, key, after);
        superseded.push({ before: before.record, after: { key, record: after } });
      }
      for (const holder of plan.holders.values()) this.supersedeKeys.take(ops, holder);
      planned = supersededOutcomes(outcomes, records, plan);
    }
    for (const [i, record] of records.entries()) {
      if (record === null) continue;
      const key = jobKeyOf(record);
      const { value, entry } = encodeWrite(record, this.log.enabled);
      ops.push(
        { column: this.cf.jobs, key, value },
        { column: this.cf.ids, key: idIndexKey(record.jobId), value: key },
      );
      const idemKey = idemKeys[i] ?? null;
      if (idemKey !== null) ops.push({ column: this.cf.idempotency, key: idemKey, value: idIndexKey(record.jobId) });
      this.orderLines.join(ops, record);
      if (record.state !== JobState.Pending) {
        // Superseded by a later draft of this call: written once, already finished.
        const finished = finishedAt(record) as Micros;
        ops.push({ column: this.cf.finished, key: finishedIndexKey(record.state, finished, record.jobId), value: key });
      }
      if (entry !== null) this.log.stage(ops, entry);
    }
    for (const { record, created } of planned) if (created) counts.push([record, +1]);
    return { outcomes: planned, superseded };
  }

  private indexCreated(
    outcomes: readonly InsertOutcome[],
    superseded: readonly { before: JobRecord; after: Loaded }[],
    now: Micros,
  ): void {
    for (const { before, after } of superseded) {
      this.records.unindex(before);
      this.records.indexWritten(after.key, after.record, now);
    }
    for (const { record, created } of outcomes) {
      if (!created) continue;
      const key = jobKeyOf(record);
      this.records.indexWritten(key, record, now);
    }
  }

  async claim(params: ClaimParams): Promise<JobRecord[]> {
    this.assertOpen();
    let entries: PendingEntry[];
    if (params.fair === true && params.scope.type === 'any') {
      const picked = this.index.takeReadyFair(params.kinds, params.limit, params.now, this.fairCursor);
      entries = picked.taken;
      this.fairCursor = picked.cursor;
    } else {
      entries = this.index.takeReady(scopePrefixOf(params.scope), params.kinds, params.limit, params.now);
    }
    if (entries.length === 0) return [];
    const leasedIds = new Set<string>();
    /** Per entry: whether this claim put its job back in the index itself, or found no row for it. */
    const settled = entries.map(() => false);
    /** Whether the claim's write went to group commit. */
    let submitted = false;
    const release = await this.locks.acquire(entries.map((e) => e.jobId));
    try {
      const rows = entries.map((e): Buffer | Loaded => {
        const cached = this.records.takePending(e.jobId);
        return cached !== undefined && latin1(cached.key) === e.key ? cached : Buffer.from(e.key, 'latin1');
      });
      const misses = rows.filter((row): row is Buffer => Buffer.isBuffer(row));
      const values = misses.length > 0 ? this.db.getManySync(this.cf.jobs, misses) : [];
      let miss = 0;
      const ops: WriteOp[] = [];
      const counts: CountChange[] = [];
      const leased: Loaded[] = [];
      for (const [i, row] of rows.entries()) {
        let key: Buffer;
        let record: JobRecord | null;
        if (Buffer.isBuffer(row)) {
          key = row;
          const value = values[miss++];
          record = value === undefined ? null : this.ctx.decodeOrSkip(key, value);
        } else {
          ({ key, record } = row);
        }
        if (record === null) {
          settled[i] = true;
          continue;
        }
        if (!isLeasable(record, params.now, params.kinds) || !inScope(record, params.scope)) {
          this.records.indexWritten(key, record, params.now);
          settled[i] = true;
          continue;
        }
        const next = params.lease(record);
        const nextKey = jobKeyOf(next);
        this.stageTransition(ops, counts, key, record, nextKey, next);
        leased.push({ key: nextKey, record: next });
      }
      submitted = true;
      await this.stageUnit(ops, counts);
      for (const { key, record } of leased) {
        this.records.indexLive(key, record, params.now);
        leasedIds.add(record.jobId);
      }
      return leased.map((l) => l.record);
    } finally {
      // A claim that failed before its write (a read error, a record the encoder refused) leased
      // nothing: the jobs it took go back to the index, else they would wait for a restart.
      if (!submitted) {
        for (const [i, entry] of entries.entries()) if (!settled[i]) this.index.addPending(entry, params.now);
      }
      // The entries counted in their lanes since they were taken; the leased ones count as leased now.
      this.index.settleClaim(entries, leasedIds);
      release();
    }
  }

  async update(jobId: string, change: (current: JobRecord) => Change, now: Micros): Promise<UpdateOutcome> {
    this.assertOpen();
    const releaseJob = await this.locks.acquire([jobId]);
    let turn: Turn | null = null;
    try {
      const current = this.load(jobId);
      if (current === null) throw notFound(`job ${jobId}`);
      const next = change(current.record);
      const drafts = next.successors ?? [];
      const releaseIdem = await this.lockInsert(drafts, jobId);
      try {
        const ops: WriteOp[] = [];
        const counts: CountChange[] = [];
        const nextKey = jobKeyOf(next.record);
        // The job's own move first: a successor taking the supersede key it lets go of stages
        // its put after the release's delete, and a batch's later op on a key wins.
        const left = this.stageTransition(ops, counts, current.key, current.record, nextKey, next.record);
        turn = left === null ? null : await this.stageTurn(ops, counts, left, jobId, now, new Set([jobId]));
        const { outcomes: successors, superseded } =
          drafts.length > 0 ? this.planInsert(drafts, now, ops, counts, next.record) : { outcomes: [], superseded: [] };
        await this.stageUnit(ops, counts);
        this.records.unindex(current.record);
        this.records.indexWritten(nextKey, next.record, now);
        this.indexTurn(turn, now);
        this.indexCreated(successors, superseded, now);
        return { record: next.record, successors };
      } finally {
        turn?.release();
        releaseIdem();
      }
    } finally {
      releaseJob();
    }
  }

  async updateMany(items: readonly UpdateItem[], now: Micros): Promise<ItemResult<JobRecord>[]> {
    this.assertOpen();
    const release = await this.locks.acquire(items.map((item) => item.jobId));
    const turns: Turn[] = [];
    try {
      const ops: WriteOp[] = [];
      // Each item stages whole or not at all (see stageTransition), so the items share these.
      const counts: CountChange[] = [];
      const results: ItemResult<JobRecord>[] = [];
      /** Each changed job as it was before this call and as it is after the items so far. */
      const changed = new Map<string, { readonly before: JobRecord; after: Loaded }>();
      /** Lines a job of the batch left, and the job. */
      const left: [slot: string, jobId: string][] = [];
      for (const item of items) {
        try {
          const seen = changed.get(item.jobId);
          const current = seen?.after ?? this.load(item.jobId);
          if (current === null) throw notFound(`job ${item.jobId}`);
          const { record } = item.change(current.record);
          const key = jobKeyOf(record);
          const slot = this.stageTransition(ops, counts, current.key, current.record, key, record);
          if (slot !== null) left.push([slot, item.jobId]);
          if (seen === undefined) changed.set(item.jobId, { before: current.record, after: { key, record } });
          else seen.after = { key, record };
          results.push(itemOk(record));
        } catch (error) {
          results.push(itemFailed(error));
        }
      }
      const held = new Set(items.map((item) => item.jobId));
      for (const [slot, jobId] of left) {
        const turn = await this.stageTurn(ops, counts, slot, jobId, now, held);
        if (turn !== null) turns.push(turn);
      }
      if (ops.length > 0) await this.stageUnit(ops, counts);
      for (const { before, after } of changed.values()) {
        this.records.unindex(before);
        this.records.indexWritten(after.key, after.record, now);
      }
      for (const turn of turns) this.indexTurn(turn, now);
      return results;
    } finally {
      for (const turn of turns) turn.release();
      release();
    }
  }

  /**
   * The ops of one job's move from `before` (stored at `key`) to `after`, index entries included.
   * All or nothing: both encodings come first, so a record the encoder refuses stages no op (a
   * delete of the old key staged alone would lose the job when a batch of several items writes the
   * others). Its counter changes go to `counts`, for `stageUnit`.
   */
  private stageTransition(
    ops: WriteOp[],
    counts: CountChange[],
    key: Buffer,
    before: JobRecord,
    nextKey: Buffer,
    after: JobRecord,
  ): string | null {
    const { value, entry } = encodeWrite(after, this.log.enabled);
    if (!key.equals(nextKey)) {
      ops.push({ column: this.cf.jobs, key, value: null });
      ops.push({ column: this.cf.ids, key: idIndexKey(after.jobId), value: nextKey });
    }
    ops.push({ column: this.cf.jobs, key: nextKey, value });
    const wasFinished = finishedAt(before);
    if (wasFinished !== null) {
      ops.push({
        column: this.cf.finished,
        key: finishedIndexKey(before.state, wasFinished, before.jobId),
        value: null,
      });
    }
    const isFinished = finishedAt(after);
    if (isFinished !== null) {
      ops.push({
        column: this.cf.finished,
        key: finishedIndexKey(after.state, isFinished, after.jobId),
        value: nextKey,
      });
    }
    if (before.state !== after.state) counts.push([before, -1], [after, +1]);
    this.supersedeKeys.release(ops, before, after);
    if (entry !== null) this.log.stage(ops, entry);
    // Leaving its ordered key's line: the caller stages the next job's turn (`stageTurn`).
    return after.orderKey !== null && !staysInLine(after) ? this.orderLines.leave(ops, after.jobId) : null;
  }

  /**
   * Hand one atomic write to group commit, and only then count what it changes: a unit that
   * failed while it was staged (its caller threw) moves no counter, which the next batch would
   * otherwise write with the rest.
   */
  private stageUnit(ops: readonly WriteOp[], counts: readonly CountChange[]): Promise<void> {
    for (const [record, delta] of counts) this.counters.bump(record, delta);
    return this.committer.stage(ops);
  }
  /** Ops that summarize everything staged since the last flush: counters and the created_at mark. */
  private summaryOps(): WriteOp[] {
    this.log.batchMade();
    const ops = this.counters.flushOps();
    if (this.createdAtDirty) {
      ops.push({ column: this.cf.meta, key: META_LAST_CREATED_AT, value: encodeU64(this.createdAt.current) });
      this.createdAtDirty = false;
    }
    return ops;
  }

  prune(params: PruneParams): Promise<number> {
    this.assertOpen();
    return pruneFinished(this.ctx, this.counters, this.pruneCursor, params);
  }

  // ---- the transitions log ----

  logHead(): Promise<string> {
    return this.log.logHead();
  }

  readLog(after: string, limit: number, filter: LogFilter): Promise<LogPage> {
    return this.log.readLog(after, limit, filter);
  }

  pruneLog(params: LogPruneParams): Promise<number> {
    return this.log.pruneLog(params);
  }

  // ---- schedules ----

  createSchedule(schedule: Schedule, maxPerScope: number): Promise<void> {
    return this.schedules.createSchedule(schedule, maxPerScope);
  }

  updateSchedule(scope: QueueScope, name: string, change: (current: Schedule) => Schedule): Promise<Schedule> {
    return this.schedules.updateSchedule(scope, name, change);
  }

  getSchedule(scope: QueueScope, name: string): Promise<Schedule | null> {
    return this.schedules.getSchedule(scope, name);
  }

  listSchedules(query: ScheduleQuery): Promise<SchedulePage> {
    return this.schedules.listSchedules(query);
  }

  deleteSchedule(scope: QueueScope, name: string): Promise<boolean> {
    return this.schedules.deleteSchedule(scope, name);
  }

  fireDueSchedules(
    now: Micros,
    limit: number,
    fire: (schedule: Schedule) => ScheduleFiring | null,
  ): Promise<FiredSchedule[]> {
    return this.schedules.fireDueSchedules(now, limit, fire);
  }

  /** A schedule's job and the schedule's own ops (`more`), staged as one unit (`InsertWith`). */
  private async insertWith(
    draft: JobDraft,
    now: Micros,
    more: (ops: WriteOp[]) => void,
  ): Promise<InsertOutcome | undefined> {
    const releaseIdem = await this.lockInsert([draft]);
    try {
      const ops: WriteOp[] = [];
      const counts: CountChange[] = [];
      const { outcomes, superseded } = this.planInsert([draft], now, ops, counts);
      const [job] = outcomes;
      more(ops);
      await this.stageUnit(ops, counts);
      if (job === undefined) return undefined;
      this.indexCreated([job], superseded, now);
      return job;
    } finally {
      releaseIdem();
    }
  }

  // ---- reads ----

  /** The current row of a job: a Leased job from memory, anything else through the id index. */
  private load(jobId: string): Loaded | null {
    const cached = this.records.leased(jobId);
    if (cached !== undefined) return cached;
    const [key] = this.db.getManySync(this.cf.ids, [idIndexKey(jobId)]);
    if (key === undefined) return null;
    const [value] = this.db.getManySync(this.cf.jobs, [key]);
    if (value === undefined) return null;
    return { key, record: decodeRecord(value, key.toString('hex')) };
  }

  get(jobId: string): Promise<JobRecord | null> {
    this.assertOpen();
    return Promise.resolve(this.load(jobId)?.record ?? null);
  }

  expiredLeases(now: Micros, limit: number): Promise<string[]> {
    this.assertOpen();
    return Promise.resolve(this.index.expired(now, limit));
  }

  leased(scope: ScopeFilter, workerId: string | null, limit: number): Promise<JobRecord[]> {
    this.assertOpen();
    const rows = [...this.records.allLeased()]
      .filter(({ record }) => inScope(record, scope) && (workerId === null || record.workerId === workerId))
      .sort((a, b) => Buffer.compare(a.key, b.key))
      .slice(0, limit);
    return Promise.resolve(rows.map((r) => r.record));
  }

  list(query: ListQuery): Promise<ListPage> {
    this.assertOpen();
    return listInOrder(this.db, this.cf.jobs, query, (key, value) => this.ctx.decodeOrSkip(key, value));
  }

  counts(scope: ScopeFilter): Promise<CountRow[]> {
    this.assertOpen();
    return Promise.resolve(this.counters.rows(scope));
  }

  nextGateAt(scope: ScopeFilter, now: Micros): Promise<Micros | null> {
    this.assertOpen();
    return Promise.resolve(this.index.nextGate(scopePrefixOf(scope), now));
  }

  /** Ready while open: the database is a directory this process holds. */
  health(): Promise<void> {
    return this.ctx.closed ? Promise.reject(storeClosed()) : Promise.resolve();
  }

  stats(): StoreStats & { batches: number; units: number; pending: number; leased: number } {
    return {
      corruptRows: this.ctx.corruptRows,
      batches: this.committer.batches,
      units: this.committer.units,
      pending: this.index.pendingCount,
      leased: this.index.leasedCount,
    };
  }

  metrics(): Promise<StoreMetrics> {
    this.assertOpen();
    const number = (name: string): number => Number(this.db.property(name));
    return Promise.resolve({
      sizeBytes: number('rocksdb.total-sst-files-size'),
      liveDataBytes: number('rocksdb.estimate-live-data-size'),
      writeStopped: number('rocksdb.is-write-stopped') !== 0,
      delayedWriteRateBytes: number('rocksdb.actual-delayed-write-rate'),
      oldestPendingAt: this.index.oldestPendingCreatedAt(),
    });
  }

  async close(): Promise<void> {
    if (this.ctx.closed) return;
    this.ctx.closed = true;
    await this.committer.drain();
    await this.db.close();
  }

  private assertOpen(): void {
    this.ctx.assertOpen();
  }
}

function idempotencyLocks(drafts: readonly Pick<JobDraft, 'tenant' | 'idempotencyKey'>[]): string[] {
  const keys: string[] = [];
  for (const d of drafts)
    if (d.idempotencyKey !== null) keys.push(`idem:${idempotencySlot(d.tenant, d.idempotencyKey)}`);
  return keys;
}
