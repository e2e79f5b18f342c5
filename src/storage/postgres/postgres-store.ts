/**
 * The PostgreSQL backend: the same seam, the same core transitions, the same
 * `[version][msgpack]` record, so several servers can share one store.
 *
 * This class only wires the store's parts, each a file holding one concern:
 * `connection.ts` (the pool and the context every part shares: transactions,
 * retries, in-doubt commits, prepared statements), `listener.ts` (LISTEN/NOTIFY,
 * reconnects, who follows the log), `claims.ts`, `writes.ts` and `insert.ts`
 * (compare-and-set writes and enqueue), `reads.ts`, `schedules.ts`,
 * `controls.ts` (pauses and kind limits) and `log.ts` (the transitions log).
 * Their SQL builders live in `sql/`.
 *
 * Each seam operation is atomic. Claims take rows with `FOR UPDATE SKIP
 * LOCKED` in one transaction, so two servers never lease the same job and
 * never wait on each other. A fenced update is a compare-and-set on the whole
 * record, so a stale submission through any server is rejected. Enqueue is one
 * INSERT; idempotency is a unique index on (scope, key).
 *
 * Ready work is a partial index over Pending rows whose gate is open and that no
 * pause holds (`held`, kept exact by the pause lock: see `writeLocks`). A gate
 * that falls due is opened (its `not_before` column set NULL) by the next
 * claim, in the claim's own transaction, so a claim never scans past rows
 * still waiting for their gate. Writes that make Pending work NOTIFY the
 * other servers, whose lease waiters wake as if the work were their own.
 *
 * The record (bytea) is the truth; the other columns are copies of its fields
 * that the indexes need.
 */
import type pg from 'pg';
import { blockedLines } from './ordered-keys.ts';
import type { BlockedKey } from '../../core/ordered-keys.ts';
import type { KindLimit, KindLimitStatus } from '../../core/kind-limits.ts';
import type { TenantLimit, TenantLimitStatus } from '../../core/tenant-limits.ts';
import type { Pause, PauseBounds, PauseScope } from '../../core/pauses.ts';
import type { Schedule, ScheduleFiring } from '../../core/schedules.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import type { LogFilter, LogPage, LogPruneParams } from '../../core/transitions-log.ts';
import type { ItemResult, JobRecord, Micros, QueueScope, ScopeFilter, WorkNotice } from '../../core/types.ts';
import type {
  Change,
  ClaimParams,
  CountRow,
  FiredSchedule,
  ImportOutcome,
  KeysImportOutcome,
  StoredKeys,
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
import { Claims } from './claims.ts';
import { openPool, pgSchema, StoreContext } from './connection.ts';
import { Controls } from './controls.ts';
import { TenantLimits } from './tenant-limits.ts';
import { importJobs } from './insert.ts';
import { importKeys, storedKeys } from './stored-keys.ts';
import { Listener } from './listener.ts';
import { TransitionsLog } from './log.ts';
import { migrate } from './migrations.ts';
import { Reads } from './reads.ts';
import { Schedules } from './schedules.ts';
import { Writes } from './writes.ts';

export interface PostgresStoreOptions {
  /**
   * e.g. `postgres://postgres@127.0.0.1:5432/test`. The store's connections name themselves
   * `telha` in `pg_stat_activity` (its `application_name`) unless the URL names another
   * (`?application_name=...`) or `PGAPPNAME` does.
   */
  readonly url: string;
  /** Schema holding Telha's tables (created if missing). Default `telha`. */
  readonly schema?: string;
  readonly logger?: Logger;
  /** Connections in the pool. Default 10. */
  readonly poolSize?: number;
  /** The longest a lease waiter sleeps before looking again (`storage.poll_interval_ms`). Default 1,000. */
  readonly pollIntervalMs?: number;
  /**
   * `storage.durability`. `fsync` (default here) keeps PostgreSQL's synchronous commit: an
   * acknowledged write is on the database's disk. `process` turns `synchronous_commit` off for
   * this store's connections: a write survives any Telha server dying, and is lost only if the
   * PostgreSQL server itself crashes within its WAL writer's delay (3 x `wal_writer_delay`, 0.6 s
   * by default). Consistency is the same either way; only that window differs.
   */
  readonly durability?: 'process' | 'fsync';
  /** Append to the transitions log (Watch reads it). Default `true`; `watch.enabled`. */
  readonly transitionsLog?: boolean;
  /**
   * `storage.prepared_statements`: run the hot statements (claims, writes, reads by id) as named
   * prepared statements, parsed and planned once per connection. Default `true`; `false` for a
   * connection pooler that cannot keep them (PgBouncer in transaction mode before 1.21).
   */
  readonly preparedStatements?: boolean;
}

export class PostgresJobStore implements JobStore {
  readonly backend = 'postgres';
  /** The pool, on the store itself too: tests read `pg_prepared_statements` through it. */
  private readonly pool: pg.Pool;
  private readonly listener: Listener;
  private readonly claims: Claims;
  private readonly writes: Writes;
  private readonly reads: Reads;
  private readonly schedules: Schedules;
  private readonly controls: Controls;
  private readonly tenantLimits: TenantLimits;
  private readonly log: TransitionsLog;
  private savedCreatedAt: Micros;
  private readonly saveTimer: NodeJS.Timeout;

  private constructor(
    private readonly ctx: StoreContext,
    /** The `storage.schema` this store's tables are in. */
    readonly schemaName: string,
    url: string,
    readonly pollIntervalMs: number,
    lastCreatedAt: Micros,
    /** Names this store in log positions (`job_transitions_meta.store_id`). */
    logId: string,
  ) {
    this.pool = ctx.pool;
    this.listener = new Listener(ctx, url, pollIntervalMs);
    const announced = this.listener.announced.bind(this.listener);
    this.claims = new Claims(ctx, announced);
    this.writes = new Writes(ctx, announced);
    this.reads = new Reads(ctx);
    this.schedules = new Schedules(ctx);
    this.controls = new Controls(ctx);
    this.tenantLimits = new TenantLimits(ctx);
    this.log = new TransitionsLog(ctx, logId);
    this.savedCreatedAt = lastCreatedAt;
    this.saveTimer = setInterval(() => void this.saveCreatedAt().catch(() => undefined), 1_000);
    this.saveTimer.unref();
  }

  private async saveCreatedAt(): Promise<void> {
    const last = this.ctx.createdAt.current;
    if (last <= this.savedCreatedAt) return;
    await this.pool.query(
      `UPDATE ${this.ctx.t}.meta SET last_created_at = GREATEST(last_created_at, $1) WHERE id = 1`,
      [last],
    );
    this.savedCreatedAt = Math.max(this.savedCreatedAt, last);
  }

  static async open(options: PostgresStoreOptions): Promise<PostgresJobStore> {
    const schemaName = options.schema ?? 'telha';
    const schema = pgSchema(schemaName);
    const logger = options.logger ?? silentLogger;
    const pool = openPool(options, logger);
    let lastCreatedAt: Micros;
    let logId: string;
    try {
      await migrate(pool, schemaName);
      const { rows } = await pool.query<{ last: string; log_id: string }>(
        `SELECT last_created_at AS last, (SELECT store_id FROM ${schema.table}.job_transitions_meta WHERE id = 1) AS log_id
         FROM ${schema.table}.meta WHERE id = 1`,
      );
      lastCreatedAt = Number(rows[0]?.last ?? 0);
      logId = rows[0]?.log_id ?? '';
    } catch (error) {
      await pool.end();
      throw error;
    }
    const ctx = new StoreContext(
      pool,
      schema,
      logger,
      options.preparedStatements ?? true,
      options.transitionsLog ?? true,
      lastCreatedAt,
    );
    const store = new PostgresJobStore(
      ctx,
      schemaName,
      options.url,
      options.pollIntervalMs ?? 1_000,
      lastCreatedAt,
      logId,
    );
    try {
      await store.listener.listen();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  // ---- the listener ----

  watch(onWork: (notices: readonly WorkNotice[] | 'all') => void): void {
    this.listener.watch(onWork);
  }

  /** Whether the LISTEN connection is up (while it is down, waiters fall back to polling). */
  get listening(): boolean {
    return this.listener.listening;
  }

  /** Log notifications this store sent (`announced`), for operators and tests. */
  get logNoticesSent(): number {
    return this.listener.logNoticesSent;
  }

  /** Whether another server said its readers follow the log, recently enough that it still holds. */
  get followedElsewhere(): boolean {
    return this.listener.followedElsewhere;
  }

  /** The backend process id of the LISTEN connection, for operators and tests. */
  get listenerPid(): number | null {
    return this.listener.listenerPid;
  }

  watchLog(onAppend: () => void): void {
    this.listener.watchLog(onAppend);
  }

  /** Readers here follow the log, or no longer do (`Listener.logFollowed`). */
  logFollowed(following: boolean): void {
    this.listener.logFollowed(following);
  }

  // ---- claims and writes ----

  insert(drafts: readonly JobDraft[], now: Micros): Promise<InsertOutcome[]> {
    return this.writes.insert(drafts, now);
  }

  importJobs(records: readonly JobRecord[], now: Micros): Promise<ImportOutcome> {
    return importJobs(this.pool, this.ctx.schema, records, now, this.ctx);
  }

  storedKeys(): Promise<StoredKeys> {
    return this.ctx.retrying(() => storedKeys(this.pool, this.ctx.t));
  }

  /** Run again whole when its answer is lost: a second run finds the jobs placed and the keys held. */
  importKeys(keys: StoredKeys): Promise<KeysImportOutcome> {
    return this.ctx.txAgain((db) => importKeys(db, this.ctx.t, keys), 'BEGIN');
  }

  claim(params: ClaimParams): Promise<JobRecord[]> {
    return this.claims.claim(params);
  }

  update(jobId: string, change: (current: JobRecord) => Change, now: Micros): Promise<UpdateOutcome> {
    return this.writes.update(jobId, change, now);
  }

  /** A worker's batch of results: one or two round trips for the whole batch (`Writes.updateMany`). */
  updateMany(items: readonly UpdateItem[], now: Micros): Promise<ItemResult<JobRecord>[]> {
    return this.writes.updateMany(items, now);
  }

  // ---- reads ----

  expiredLeases(now: Micros, limit: number): Promise<string[]> {
    return this.reads.expiredLeases(now, limit);
  }

  leased(scope: ScopeFilter, workerId: string | null, limit: number): Promise<JobRecord[]> {
    return this.reads.leased(scope, workerId, limit);
  }

  prune(params: PruneParams): Promise<number> {
    return this.reads.prune(params);
  }

  get(jobId: string): Promise<JobRecord | null> {
    return this.reads.get(jobId);
  }

  list(query: ListQuery): Promise<ListPage> {
    return this.reads.list(query);
  }

  counts(scope: ScopeFilter): Promise<CountRow[]> {
    return this.reads.counts(scope);
  }

  nextGateAt(scope: ScopeFilter, now: Micros): Promise<Micros | null> {
    return this.reads.nextGateAt(scope, now);
  }

  /** One round trip: the table's size with indexes and TOAST, and the oldest Pending job (a scan of the Pending rows). */
  metrics(): Promise<StoreMetrics> {
    return this.reads.metrics();
  }

  async health(): Promise<void> {
    // Resolves when the database answers; `unavailable` while it cannot be reached.
    await this.ctx.query('SELECT 1', []);
  }

  stats(): StoreStats {
    return { corruptRows: this.ctx.corruptRows };
  }

  // ---- schedules ----

  /** One creator per scope at a time across servers (`Schedules.createSchedule`). */
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

  /** One transaction per pass, due rows locked with SKIP LOCKED (`Schedules.fireDueSchedules`). */
  fireDueSchedules(
    now: Micros,
    limit: number,
    fire: (schedule: Schedule) => ScheduleFiring | null,
  ): Promise<FiredSchedule[]> {
    return this.schedules.fireDueSchedules(now, limit, fire);
  }

  // ---- pauses and kind limits ----

  /** The pause and the `held` mark on every Pending job it covers, in one transaction (`Controls.pauseKinds`). */
  pauseKinds(pause: Pause, bounds: PauseBounds): Promise<Pause> {
    return this.controls.pauseKinds(pause, bounds);
  }

  /** Also tells every server's lease waiters to look again: the resumed work is there now. */
  blockedKeys(filter: ScopeFilter, limit: number): Promise<BlockedKey[]> {
    return this.ctx.retrying(() => blockedLines(this.pool, this.ctx.t, filter, limit));
  }

  releaseKey(scope: QueueScope, orderKey: string, now: Micros): Promise<JobRecord | null> {
    return this.writes.releaseKey(scope, orderKey, now);
  }

  resumeKinds(scope: PauseScope, kindPrefix: string): Promise<boolean> {
    return this.controls.resumeKinds(scope, kindPrefix);
  }

  listPauses(filter: ScopeFilter): Promise<Pause[]> {
    return this.controls.listPauses(filter);
  }

  /** The limit and the lane of every job it covers, in one transaction (`Controls.setKindLimit`). */
  setKindLimit(limit: KindLimit, maxTotal: number): Promise<KindLimit> {
    return this.controls.setKindLimit(limit, maxTotal);
  }

  /** The limit gone and its jobs moved to the next longest lane covering them, or none. */
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

  // ---- the transitions log ----

  /** `(xmin, 0)`: every transaction that may still append has an xid at or above the oldest running one. */
  logHead(): Promise<string> {
    return this.log.logHead();
  }

  /** Entries in (xid, seq) order, of transactions older than the oldest one running (`TransitionsLog.readLog`). */
  readLog(after: string, limit: number, filter: LogFilter): Promise<LogPage> {
    return this.log.readLog(after, limit, filter);
  }

  /** Delete the oldest readable entries past retention, and move the pruned mark (`TransitionsLog.pruneLog`). */
  pruneLog(params: LogPruneParams): Promise<number> {
    return this.log.pruneLog(params);
  }

  async close(): Promise<void> {
    if (this.ctx.closing) return;
    this.ctx.closing = true;
    clearInterval(this.saveTimer);
    const listener = this.listener.detach();
    await this.saveCreatedAt().catch((error: unknown) =>
      this.ctx.logger.warn({ err: (error as Error).message }, 'could not save the created_at high-water mark'),
    );
    await Promise.all([listener?.end().catch(() => undefined), this.pool.end()]);
  }
}
