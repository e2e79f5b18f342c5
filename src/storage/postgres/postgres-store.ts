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
import {
  admitKindLimit,
  compareKindLimits,
  type KindLimit,
  type KindLimitStatus,
  laneTokenDue,
  limitStatus,
} from '../../core/kind-limits.ts';
import {
  admitPause,
  comparePauses,
  type Pause,
  type PauseBounds,
  pauseInFilter,
  type PauseScope,
} from '../../core/pauses.ts';
import { type Schedule, scheduleExists, type ScheduleFiring, tooManySchedules } from '../../core/schedules.ts';
import { type Logger, silentLogger } from '../../core/logger.ts';
import {
  formatPosition,
  type LogEntry,
  logEntryExpired,
  type LogFilter,
  logMatches,
  type LogPage,
  type LogPruneParams,
  parsePosition,
  positionPruned,
} from '../../core/transitions-log.ts';
import type { ItemResult, JobRecord, JobState, Micros, QueueScope, ScopeFilter, WorkNotice } from '../../core/types.ts';
import type {
  Change,
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
import { Claims } from './claims.ts';
import { type Db, InDoubt, openPool, pgSchema, StoreContext } from './connection.ts';
import { Listener } from './listener.ts';
import { migrate } from './migrations.ts';
import { Writes } from './writes.ts';
import { decodeJobKey, pageTokenAfter, pageTokenKey, scopeBytes } from '../../codec/keys.ts';
import { decodeRecord } from '../../codec/value.ts';
import {
  bucketOfRow,
  laneSql,
  LIMIT_COLUMNS,
  limitOfRow,
  type LimitRow,
  pauseCovers,
  pausedSql,
} from './sql/controls.ts';
import { CorruptRecordError, notFound } from '../../core/errors.ts';
import { decodeSchedule, encodeSchedule, schedulePageKey, schedulePageToken } from '../../codec/schedules.ts';
import { pgFailure } from './failures.ts';
import { insertJobs } from './insert.ts';
import { SYSTEM_KIND_PREFIX } from '../../core/limits.ts';
import { decodePause, encodePause, pauseScopeBytes } from '../../codec/pauses.ts';
import { allWorkPayload } from './notices.ts';

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
  private savedCreatedAt: Micros;
  private readonly saveTimer: NodeJS.Timeout;
  private readonly t: string;
  // ---- pauses ----
  /** Names this store in log positions (`job_transitions_meta.store_id`). */
  private readonly logId: string;

  private constructor(
    private readonly ctx: StoreContext,
    /** The `storage.schema` this store's tables are in. */
    readonly schemaName: string,
    url: string,
    readonly pollIntervalMs: number,
    lastCreatedAt: Micros,
    logId: string,
  ) {
    this.pool = ctx.pool;
    this.t = ctx.t;
    this.logId = logId;
    this.listener = new Listener(ctx, url, pollIntervalMs);
    const announced = this.listener.announced.bind(this.listener);
    this.claims = new Claims(ctx, announced);
    this.writes = new Writes(ctx, announced);
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

  async health(): Promise<void> {
    // Resolves when the database answers; `unavailable` while it cannot be reached.
    await this.ctx.query('SELECT 1', []);
  }

  stats(): StoreStats {
    return { corruptRows: this.ctx.corruptRows };
  }

  // ---- schedules ----

  // ---- pauses and kind limits ----

  // ---- the transitions log ----

  async expiredLeases(now: Micros, limit: number): Promise<string[]> {
    const { rows } = await this.ctx.query<{ job_id: string }>(
      `SELECT job_id FROM ${this.t}.jobs WHERE state = 1 AND lease_deadline <= $1
       ORDER BY lease_deadline, job_id LIMIT $2`,
      [now, limit],
    );
    return rows.map((r) => r.job_id);
  }

  async leased(scope: ScopeFilter, workerId: string | null, limit: number): Promise<JobRecord[]> {
    const args: unknown[] = [limit];
    let where = 'state = 1';
    if (scope.type !== 'any') {
      args.push(scopeBytes(scope));
      where += ` AND scope = $${args.length}`;
    }
    if (workerId !== null) {
      args.push(workerId);
      where += ` AND worker_id = $${args.length}`;
    }
    const { rows } = await this.ctx.query<{ job_id: string; record: Buffer }>(
      `SELECT job_id, record FROM ${this.t}.jobs WHERE ${where} ORDER BY scope, priority, created_at, job_id LIMIT $1`,
      args,
    );
    return rows.map((r) => this.ctx.decode(r)).filter((r): r is JobRecord => r !== null);
  }

  async prune(params: PruneParams): Promise<number> {
    const { rowCount } = await this.ctx.query(
      `DELETE FROM ${this.t}.jobs WHERE job_id IN (
         SELECT job_id FROM ${this.t}.jobs WHERE state = $1 AND finished_at < $2
         ORDER BY finished_at, job_id LIMIT $3 FOR UPDATE SKIP LOCKED)`,
      [params.state, params.finishedBefore, params.limit],
    );
    return rowCount ?? 0;
  }

  async get(jobId: string): Promise<JobRecord | null> {
    const { rows } = await this.ctx.query<{ job_id: string; record: Buffer }>(
      `SELECT job_id, record FROM ${this.t}.jobs WHERE job_id = $1`,
      [jobId],
    );
    const row = rows[0];
    return row === undefined ? null : decodeRecord(row.record, `job ${jobId}`);
  }

  async list(query: ListQuery): Promise<ListPage> {
    const args: unknown[] = [query.limit + 1];
    const where: string[] = [];
    if (query.scope.type !== 'any') {
      args.push(scopeBytes(query.scope));
      where.push(`scope = $${args.length}`);
    }
    if (query.state !== null) {
      args.push(query.state);
      where.push(`state = $${args.length}`);
    }
    if (query.kindPrefix !== null) {
      args.push(query.kindPrefix);
      where.push(`starts_with(kind, $${args.length})`);
    }
    if (query.pageToken !== null) {
      const after = decodeJobKey(pageTokenKey(query.pageToken));
      args.push(after.scope, after.state, after.priority, after.createdAt, after.jobId);
      const n = args.length;
      where.push(`(scope, state, priority, created_at, job_id) > ($${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}, $${n})`);
    }
    const { rows } = await this.ctx.query<{ job_id: string; record: Buffer }>(
      `SELECT job_id, record FROM ${this.t}.jobs ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY scope, state, priority, created_at, job_id LIMIT $1`,
      args,
    );
    const more = rows.length > query.limit;
    const jobs = rows
      .slice(0, query.limit)
      .map((r) => this.ctx.decode(r))
      .filter((r): r is JobRecord => r !== null);
    const last = jobs[jobs.length - 1];
    return { jobs, nextPageToken: more && last !== undefined ? pageTokenAfter(last) : null };
  }

  async counts(scope: ScopeFilter): Promise<CountRow[]> {
    const args: unknown[] = [];
    let where = '';
    if (scope.type !== 'any') {
      args.push(scopeBytes(scope));
      where = 'WHERE scope = $1';
    }
    const { rows } = await this.ctx.query<{ state: number; kind: string; count: string }>(
      `SELECT state, kind, count(*) AS count FROM ${this.t}.jobs ${where}
       GROUP BY state, kind ORDER BY state, kind COLLATE "C"`,
      args,
    );
    return rows.map((r) => ({ state: r.state as JobState, kind: r.kind, count: Number(r.count) }));
  }

  async nextGateAt(scope: ScopeFilter, now: Micros): Promise<Micros | null> {
    const args: unknown[] = [now];
    let where = 'state = 0 AND not_before > $1';
    if (scope.type !== 'any') {
      args.push(scopeBytes(scope));
      where += ' AND scope = $2';
    }
    // One round trip unless a rate limit exists: then a second looks at the rate-limited lanes.
    const { rows } = await this.ctx.query<{ gate: string | null; rated: boolean }>(
      `SELECT (SELECT min(not_before) FROM ${this.t}.jobs WHERE ${where}) AS gate,
         EXISTS (SELECT 1 FROM ${this.t}.kind_limits WHERE rate_count IS NOT NULL) AS rated`,
      args,
    );
    const gate = rows[0]?.gate;
    let earliest = gate === null || gate === undefined ? null : Number(gate);
    if (rows[0]?.rated !== true) return earliest;
    // Sooner: the next token of a rate-limited lane, not full, that holds back ready work in scope.
    // Ready includes a row whose gate is due but not yet opened (claims open due gates lazily).
    const lanes = await this.ctx.query<LimitRow & { leased: string }>(
      `SELECT ${LIMIT_COLUMNS}, (SELECT count(*) FROM ${this.t}.jobs j WHERE j.state = 1 AND j.lane = kl.kind_prefix) AS leased
       FROM ${this.t}.kind_limits kl WHERE rate_count IS NOT NULL AND EXISTS (SELECT 1 FROM ${this.t}.jobs j
         WHERE j.state = 0 AND NOT j.held AND (j.not_before IS NULL OR j.not_before <= $1)
           AND j.lane = kl.kind_prefix${scope.type === 'any' ? '' : ' AND j.scope = $2'})`,
      scope.type === 'any' ? [now] : [now, scopeBytes(scope)],
    );
    for (const row of lanes.rows) {
      const at = laneTokenDue(limitOfRow(row), Number(row.leased), bucketOfRow(row), now);
      if (at !== null && (earliest === null || at < earliest)) earliest = at;
    }
    return earliest;
  }

  /** One round trip: the table's size with indexes and TOAST, and the oldest Pending job (a scan of the Pending rows). */
  async metrics(): Promise<StoreMetrics> {
    const { rows } = await this.ctx.pool.query<{ size: string; oldest: string | null }>(
      `SELECT pg_total_relation_size('${this.t}.jobs') AS size,
              (SELECT min(created_at) FROM ${this.t}.jobs WHERE state = 0) AS oldest`,
    );
    const row = rows[0];
    return { sizeBytes: Number(row?.size ?? 0), oldestPendingAt: row?.oldest == null ? null : Number(row.oldest) };
  }

  async createSchedule(schedule: Schedule, maxPerScope: number): Promise<void> {
    const scope = scopeBytes(schedule.scope);
    const record = encodeSchedule(schedule);
    try {
      await this.ctx.retrying(() =>
        this.ctx.tx(async (db) => {
          // One creator per scope at a time across servers, so the count below stays true until COMMIT.
          await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
            `telha-schedules:${this.t}:${scope.toString('hex')}`,
          ]);
          const { rows } = await db.query<{ held: string; taken: boolean }>(
            `SELECT count(*) AS held, bool_or(name = $2) AS taken FROM ${this.t}.schedules WHERE scope = $1`,
            [scope, schedule.name],
          );
          if (rows[0]?.taken === true) throw scheduleExists(schedule.name);
          if (Number(rows[0]?.held ?? 0) >= maxPerScope) throw tooManySchedules(maxPerScope);
          await db.query(
            `INSERT INTO ${this.t}.schedules (scope, name, next_due_at, paused, record) VALUES ($1, $2, $3, $4, $5)`,
            [scope, schedule.name, schedule.nextDueAt, schedule.paused, record],
          );
        }),
      );
    } catch (error) {
      if (!(error instanceof InDoubt)) throw error;
      const stored = await this.ctx.retrying(() => this.storedSchedule(schedule.scope, schedule.name));
      if (stored?.equals(record)) return;
      throw pgFailure(error.cause);
    }
  }

  async updateSchedule(scope: QueueScope, name: string, change: (current: Schedule) => Schedule): Promise<Schedule> {
    const run = (): Promise<Schedule> =>
      this.ctx.tx(async (db) => {
        const { rows } = await db.query<{ record: Buffer }>(
          `SELECT record FROM ${this.t}.schedules WHERE scope = $1 AND name = $2 FOR UPDATE`,
          [scopeBytes(scope), name],
        );
        const row = rows[0];
        if (row === undefined) throw notFound(`schedule ${name}`);
        const next = change(decodeSchedule(row.record, `schedule ${name}`));
        await this.writeSchedules(db, [next]);
        return next;
      });
    try {
      return await this.ctx.retrying(run);
    } catch (error) {
      if (!(error instanceof InDoubt)) throw error;
      const next = error.result as Schedule;
      const stored = await this.ctx.retrying(() => this.storedSchedule(scope, name));
      if (stored?.equals(encodeSchedule(next))) return next;
      throw pgFailure(error.cause);
    }
  }

  async getSchedule(scope: QueueScope, name: string): Promise<Schedule | null> {
    const stored = await this.ctx.retrying(() => this.storedSchedule(scope, name));
    return stored === undefined ? null : decodeSchedule(stored, `schedule ${name}`);
  }

  private async storedSchedule(scope: QueueScope, name: string): Promise<Buffer | undefined> {
    const { rows } = await this.ctx.pool.query<{ record: Buffer }>(
      `SELECT record FROM ${this.t}.schedules WHERE scope = $1 AND name = $2`,
      [scopeBytes(scope), name],
    );
    return rows[0]?.record;
  }

  async listSchedules(query: ScheduleQuery): Promise<SchedulePage> {
    const values: unknown[] = [query.limit + 1];
    const where: string[] = [];
    if (query.scope.type !== 'any') {
      values.push(scopeBytes(query.scope));
      where.push(`scope = $${values.length}`);
    }
    if (query.pageToken !== null) {
      const after = schedulePageKey(query.pageToken);
      values.push(after.subarray(0, 32), after.subarray(32).toString('utf8'));
      where.push(`(scope, name) > ($${values.length - 1}, $${values.length})`);
    }
    const { rows } = await this.ctx.retrying(() =>
      this.ctx.pool.query<{ scope: Buffer; name: string; record: Buffer }>(
        `SELECT scope, name, record FROM ${this.t}.schedules ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY scope, name LIMIT $1`,
        values,
      ),
    );
    const schedules: Schedule[] = [];
    for (const row of rows.slice(0, query.limit)) {
      const schedule = this.decodeSchedule(row);
      if (schedule !== null) schedules.push(schedule);
    }
    const last = schedules[schedules.length - 1];
    return { schedules, nextPageToken: rows.length > query.limit && last ? schedulePageToken(last) : null };
  }

  private decodeSchedule(row: { name: string; record: Buffer }): Schedule | null {
    try {
      return decodeSchedule(row.record, `schedule ${row.name}`);
    } catch (error) {
      if (!(error instanceof CorruptRecordError)) throw error;
      this.ctx.corruptRows++;
      this.ctx.logger.warn({ key: error.key, err: error.message }, 'skipping corrupt schedule row');
      return null;
    }
  }

  async deleteSchedule(scope: QueueScope, name: string): Promise<boolean> {
    // Run again after a lost answer, a delete that landed finds nothing: the caller hears
    // `not_found` for a schedule that is gone either way.
    const { rowCount } = await this.ctx.retrying(() =>
      this.ctx.pool.query(`DELETE FROM ${this.t}.schedules WHERE scope = $1 AND name = $2`, [scopeBytes(scope), name]),
    );
    return (rowCount ?? 0) > 0;
  }

  /**
   * One transaction per pass: the due rows locked with SKIP LOCKED (a row another server is
   * firing is left to it), their jobs inserted by the one INSERT every enqueue uses (a due
   * time's idempotency key holds its job, so a due time fired twice creates one), and the rows
   * moved to their next due time, all committed together.
   */
  async fireDueSchedules(
    now: Micros,
    limit: number,
    fire: (schedule: Schedule) => ScheduleFiring | null,
  ): Promise<FiredSchedule[]> {
    const run = (): Promise<FiredSchedule[]> =>
      this.ctx.tx(async (db) => {
        const { rows } = await db.query<{ name: string; record: Buffer }>(
          `SELECT name, record FROM ${this.t}.schedules
           WHERE NOT paused AND next_due_at IS NOT NULL AND next_due_at <= $1
           ORDER BY next_due_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
          [now, limit],
        );
        const firings: ScheduleFiring[] = [];
        for (const row of rows) {
          const schedule = this.decodeSchedule(row);
          const firing = schedule === null ? null : fire(schedule);
          if (firing !== null) firings.push(firing);
        }
        if (firings.length === 0) return [];
        const jobs = await insertJobs(
          db,
          this.ctx.schema,
          firings.map((f) => f.draft),
          now,
          { origin: this.ctx.origin, createdAt: this.ctx.createdAt, log: this.ctx.logging, binaryArrays: true },
        );
        await this.writeSchedules(
          db,
          firings.map((f) => f.next),
        );
        return firings.map((f, i) => ({ schedule: f.next, job: jobs[i] as InsertOutcome }));
      });
    try {
      return await this.ctx.retrying(run);
    } catch (error) {
      // Landed or not, the next pass settles it: a schedule still due fires again under the
      // same idempotency key, and one that moved on is not due.
      if (error instanceof InDoubt) return [];
      throw error;
    }
  }

  /** Store new versions of schedules this transaction holds locked, in one statement. */
  private async writeSchedules(db: Db, schedules: readonly Schedule[]): Promise<void> {
    await db.query(
      `UPDATE ${this.t}.schedules AS s SET next_due_at = u.next_due_at, paused = u.paused, record = u.record
       FROM unnest($1::bytea[], $2::text[], $3::bigint[], $4::boolean[], $5::bytea[])
         AS u(scope, name, next_due_at, paused, record)
       WHERE s.scope = u.scope AND s.name = u.name`,
      [
        schedules.map((x) => scopeBytes(x.scope)),
        schedules.map((x) => x.name),
        schedules.map((x) => x.nextDueAt),
        schedules.map((x) => x.paused),
        schedules.map((x) => encodeSchedule(x)),
      ],
    );
  }

  /**
   * The pause and the `held` mark on every Pending job it covers, in one transaction under the
   * pause lock (`writeLocks`): claims skip held rows through the ready index, which leaves them
   * out, so a pause holds on every server from its commit on and costs claims nothing. The lock
   * also serialises pauses, so two servers cannot both take the last free place.
   */
  async pauseKinds(pause: Pause, bounds: PauseBounds): Promise<Pause> {
    // Run again, a pause that landed is found and returned: pausing is idempotent (`txAgain`).
    return this.ctx.txAgain(async (db) => {
      const held = await this.readPauses(db);
      const existing = admitPause(held, pause, bounds);
      if (existing !== null) return existing;
      const scope = pauseScopeBytes(pause.scope);
      await db.query(`INSERT INTO ${this.t}.kind_pauses (scope, kind_prefix, record) VALUES ($1, $2, $3)`, [
        scope,
        pause.kindPrefix,
        encodePause(pause),
      ]);
      await db.query(
        `UPDATE ${this.t}.jobs SET held = true WHERE state = 0 AND NOT held AND ${pauseCovers('$1', '$2')}`,
        [scope, pause.kindPrefix],
      );
      return pause;
    }, this.pauseBegin);
  }

  /** Also tells every server's lease waiters to look again: the resumed work is there now. */
  async resumeKinds(scope: PauseScope, kindPrefix: string): Promise<boolean> {
    // Run again (`txAgain`), as for a schedule's delete: a resume that landed then finds nothing,
    // and the caller hears `not_found` for a pause that is gone either way (never "resumed" for
    // one that may still hold).
    return this.ctx.txAgain(async (db) => {
      const { rowCount } = await db.query(
        `DELETE FROM ${this.t}.kind_pauses WHERE scope IS NOT DISTINCT FROM $1 AND kind_prefix = $2`,
        [pauseScopeBytes(scope), kindPrefix],
      );
      if ((rowCount ?? 0) === 0) return false;
      // Through `jobs_held`: only the held rows are read. Rows another pause covers stay held.
      await db.query(
        `UPDATE ${this.t}.jobs j SET held = false WHERE state = 0 AND held AND ${pauseCovers('$1', '$2')}
             AND NOT ${pausedSql(this.t, 'j.scope', 'j.kind')}`,
        [pauseScopeBytes(scope), kindPrefix],
      );
      await db.query('SELECT pg_notify($1, $2)', [this.ctx.schema.channel, allWorkPayload(this.ctx.origin)]);
      return true;
    }, this.pauseBegin);
  }

  // ---- kind limits ----

  /**
   * The limit and the lane of every Pending and Leased job it now covers (`lane`: the longest
   * prefix), in one transaction holding EXCLUSIVE on `kind_limits` (`writeLocks`), so no write or
   * limited claim runs meanwhile. A bucket is kept while the limit keeps a rate. Wakes every
   * server's lease waiters: the new limit may leave more room.
   */
  async setKindLimit(limit: KindLimit, maxTotal: number): Promise<KindLimit> {
    // Run again (`txAgain`), the upsert lands the same limit.
    return this.ctx.txAgain(async (db) => {
      const { rows } = await db.query<LimitRow>(`SELECT ${LIMIT_COLUMNS} FROM ${this.t}.kind_limits`);
      admitKindLimit(rows.map(limitOfRow), limit, maxTotal);
      await db.query(
        `INSERT INTO ${this.t}.kind_limits (kind_prefix, concurrency, rate_count, rate_period_ms, set_at, set_by)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (kind_prefix) DO UPDATE SET concurrency = EXCLUDED.concurrency,
               rate_count = EXCLUDED.rate_count, rate_period_ms = EXCLUDED.rate_period_ms,
               set_at = EXCLUDED.set_at, set_by = EXCLUDED.set_by,
               tokens = CASE WHEN EXCLUDED.rate_count IS NULL THEN NULL ELSE kind_limits.tokens END,
               refilled_at = CASE WHEN EXCLUDED.rate_count IS NULL THEN NULL ELSE kind_limits.refilled_at END`,
        [
          limit.kindPrefix,
          limit.concurrency,
          limit.rate?.count ?? null,
          limit.rate?.periodMs ?? null,
          limit.setAt,
          limit.by,
        ],
      );
      // Covered by this prefix and by none longer: a longer lane would be a longer prefix.
      await db.query(
        `UPDATE ${this.t}.jobs SET lane = $1 WHERE state IN (0, 1) AND starts_with(kind, $1)
               AND (starts_with($1, '${SYSTEM_KIND_PREFIX}') OR NOT starts_with(kind, '${SYSTEM_KIND_PREFIX}'))
               AND (lane IS NULL OR length(lane) < length($1))`,
        [limit.kindPrefix],
      );
      await this.notifyAll(db);
      return limit;
    }, this.limitBegin);
  }

  /** The limit gone and its jobs moved to the next longest lane covering them, or none. */
  async clearKindLimit(kindPrefix: string): Promise<boolean> {
    // Run again (`txAgain`), as for a resume: a clear that landed then finds nothing (`not_found`).
    return this.ctx.txAgain(async (db) => {
      const { rowCount } = await db.query(`DELETE FROM ${this.t}.kind_limits WHERE kind_prefix = $1`, [kindPrefix]);
      if ((rowCount ?? 0) === 0) return false;
      await db.query(
        `UPDATE ${this.t}.jobs SET lane = ${laneSql(this.t, 'kind')} WHERE state IN (0, 1) AND lane = $1`,
        [kindPrefix],
      );
      await this.notifyAll(db);
      return true;
    }, this.limitBegin);
  }

  async listKindLimits(now: Micros): Promise<KindLimitStatus[]> {
    const { rows } = await this.ctx.query<LimitRow & { leased: string }>(
      `SELECT ${LIMIT_COLUMNS}, (SELECT count(*) FROM ${this.t}.jobs j WHERE j.state = 1 AND j.lane = kl.kind_prefix) AS leased
       FROM ${this.t}.kind_limits kl`,
      [],
    );
    return rows
      .map((row) => limitStatus(limitOfRow(row), Number(row.leased), bucketOfRow(row), now))
      .sort(compareKindLimits);
  }

  /** Setting and clearing a limit hold the limit lock (`writeLocks`) from the start. */
  private get limitBegin(): string {
    return `BEGIN; LOCK TABLE ${this.t}.kind_limits IN EXCLUSIVE MODE`;
  }

  /** Every server's lease waiters look again when this transaction commits. */
  private async notifyAll(db: Db): Promise<void> {
    await db.query('SELECT pg_notify($1, $2)', [this.ctx.schema.channel, allWorkPayload(this.ctx.origin)]);
  }

  /** Pause and resume hold the pause lock (`writeLocks`) from the start: one writer of pauses at a time. */
  private get pauseBegin(): string {
    return `BEGIN; LOCK TABLE ${this.t}.kind_pauses IN EXCLUSIVE MODE`;
  }

  async listPauses(filter: ScopeFilter): Promise<Pause[]> {
    const pauses = await this.ctx.retrying(() => this.readPauses(this.ctx.pool));
    return pauses.filter((p) => pauseInFilter(p, filter)).sort(comparePauses);
  }

  private async readPauses(db: Db | pg.Pool): Promise<Pause[]> {
    const { rows } = await db.query<{ record: Buffer }>(`SELECT record FROM ${this.t}.kind_pauses`);
    const pauses: Pause[] = [];
    for (const row of rows) {
      try {
        pauses.push(decodePause(row.record, 'kind_pauses row'));
      } catch (error) {
        if (!(error instanceof CorruptRecordError)) throw error;
        this.ctx.corruptRows++;
        this.ctx.logger.warn({ key: error.key, err: error.message }, 'skipping corrupt pause row');
      }
    }
    return pauses;
  }

  private position(xid: bigint | string, seq: bigint | string): string {
    return formatPosition(LOG_FORMAT, this.logId, [xid, seq]);
  }

  /** `(xmin, 0)`: every transaction that may still append has an xid at or above the oldest running one. */
  async logHead(): Promise<string> {
    const { rows } = await this.ctx.query<{ xmin: string }>(
      'SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin',
      [],
    );
    return this.position(rows[0]?.xmin ?? '0', 0n);
  }

  /**
   * Entries in (xid, seq) order, only of transactions older than the oldest one still running:
   * no transaction can commit an entry before those any more, so a reader never passes a position
   * an entry later appears behind. A transaction that stays open (an application's, holding an
   * enqueue) holds back every watcher until it ends. The filter is applied in the query: entries
   * that do not match come back as positions only.
   */
  async readLog(after: string, limit: number, filter: LogFilter): Promise<LogPage> {
    const [xid, seq] = parsePosition(after, LOG_FORMAT, this.logId, 2) as [bigint, bigint];
    const { rows } = await this.ctx.query<{
      pruned_xid: string;
      pruned_seq: string;
      xid: string | null;
      seq: string | null;
      entry: Buffer | null;
    }>(
      `SELECT m.pruned_xid::text AS pruned_xid, m.pruned_seq::text AS pruned_seq, r.xid::text AS xid,
         r.seq::text AS seq, r.entry
       FROM ${this.t}.job_transitions_meta m LEFT JOIN LATERAL (
         SELECT t.xid, t.seq, CASE WHEN ($4::bytea IS NULL OR t.scope = $4) AND starts_with(t.kind, $5)
             AND ($6::uuid IS NULL OR t.job_id = $6) THEN t.entry END AS entry
         FROM ${this.t}.job_transitions t
         WHERE (t.xid, t.seq) > ($1::text::xid8, $2::bigint) AND t.xid < pg_snapshot_xmin(pg_current_snapshot())
         ORDER BY t.xid, t.seq LIMIT $3
       ) r ON true WHERE m.id = 1 ORDER BY r.xid, r.seq`,
      [
        xid.toString(),
        seq.toString(),
        limit,
        filter.scope.type === 'any' ? null : scopeBytes(filter.scope),
        filter.kindPrefix,
        filter.jobId,
      ],
    );
    const first = rows[0];
    if (first !== undefined && compareXidSeq([xid, seq], [BigInt(first.pruned_xid), BigInt(first.pruned_seq)]) < 0) {
      throw positionPruned();
    }
    const entries: LogEntry[] = [];
    let position = after;
    for (const row of rows) {
      if (row.xid === null || row.seq === null) continue;
      position = this.position(row.xid, row.seq);
      if (row.entry === null) continue;
      const job = this.ctx.decode({ job_id: `log ${row.xid}.${row.seq}`, record: row.entry });
      if (job !== null && logMatches(job, filter)) entries.push({ position, seq: Number(row.seq), job });
    }
    return { entries, position };
  }

  /**
   * Delete the oldest readable entries past retention, in log order, and move the pruned mark to
   * the last, in one transaction: a reader behind the mark is told, one past it missed nothing.
   * The count bound reads the sequence: `seq` values taken and rolled back count too, so it
   * errs on keeping fewer.
   */
  async pruneLog(params: LogPruneParams): Promise<number> {
    const { rows } = await this.ctx.query<{ xid: string; seq: string; at: string; last: string }>(
      `SELECT xid::text AS xid, seq::text AS seq, at::text AS at,
         (SELECT last_value FROM ${this.t}.job_transitions_seq)::text AS last
       FROM ${this.t}.job_transitions WHERE xid < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY xid, seq LIMIT $1`,
      [params.limit],
    );
    let doomed: { xid: string; seq: string } | null = null;
    let count = 0;
    for (const row of rows) {
      if (!logEntryExpired(Number(row.at), Number(row.last) - Number(row.seq), params)) break;
      doomed = row;
      count++;
    }
    if (doomed === null) return 0;
    const last = doomed;
    await this.ctx
      .retrying(() =>
        this.ctx.tx(async (db) => {
          await db.query(`DELETE FROM ${this.t}.job_transitions WHERE (xid, seq) <= ($1::text::xid8, $2::bigint)`, [
            last.xid,
            last.seq,
          ]);
          await db.query(
            `UPDATE ${this.t}.job_transitions_meta SET pruned_xid = $1::text::xid8, pruned_seq = $2::bigint
           WHERE id = 1 AND (pruned_xid, pruned_seq) < ($1::text::xid8, $2::bigint)`,
            [last.xid, last.seq],
          );
        }),
      )
      .catch((error: unknown) => {
        // Landed or not, the next pass settles it.
        if (!(error instanceof InDoubt)) throw error;
      });
    return count;
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

/** A PostgreSQL store's log position: `p1.<store id>.<xid>.<seq>`. */
const LOG_FORMAT = 'p1';

function compareXidSeq(a: readonly [bigint, bigint], b: readonly [bigint, bigint]): number {
  return a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] === b[1] ? 0 : a[1] < b[1] ? -1 : 1;
}
