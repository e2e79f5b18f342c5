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
  LaneBudget,
  laneMayServe,
  laneRoom,
  laneTokenDue,
  limitStatus,
  pickWithinLimits,
  type TokenBucket,
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
import {
  finishedAt,
  itemFailed,
  itemOk,
  type ItemResult,
  type JobRecord,
  JobState,
  type Micros,
  type QueueScope,
  type ScopeFilter,
  SYSTEM_SCOPE,
  type WorkNotice,
  workNotices,
} from '../../core/types.ts';
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
import {
  CONNECTION_TRIES,
  type Db,
  InDoubt,
  named,
  openPool,
  pgSchema,
  sqlLiteral,
  statementName,
  StoreContext,
  writeInDoubt,
} from './connection.ts';
import { type Announce, Listener } from './listener.ts';
import { migrate } from './migrations.ts';
import { fairPick } from '../../core/fair-order.ts';
import { leasesSystemKinds } from '../../core/transitions.ts';
import { decodeJobKey, pageTokenAfter, pageTokenKey, scopeBytes, scopeOfTenant } from '../../codec/keys.ts';
import { decodeRecord, encodeRecord } from '../../codec/value.ts';
import {
  claimGatesQuery,
  claimQuery,
  type ClaimRow,
  fairClaimQuery,
  fairLaneClaimQuery,
  type FairRow,
  laneClaimQuery,
} from './sql/claims.ts';
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
import { BINARY_ARRAYS } from './binary-arrays.ts';
import { isConnectionFailure, pgFailure } from './failures.ts';
import { insertJobs } from './insert.ts';
import { allWorkPayload, noticePayload } from './notices.ts';
import { closedGate, encodeWrites, updateJobsText, withLog } from './sql/writes.ts';
import { decodeSchedule, encodeSchedule, schedulePageKey, schedulePageToken } from '../../codec/schedules.ts';
import { SYSTEM_KIND_PREFIX } from '../../core/limits.ts';
import { decodePause, encodePause, pauseScopeBytes } from '../../codec/pauses.ts';

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
  private savedCreatedAt: Micros;
  private readonly saveTimer: NodeJS.Timeout;
  private readonly t: string;
  /** Tells the other servers' watchers of committed transitions (`Listener.announced`). */
  private readonly announced: Announce;
  /** The fair order's cursor: the scope of the tenant this store's fair claims served last. */
  private fairCursor: Buffer | null = null;
  /**
   * The claim's gate opening and its read of the limits, in one statement (`$1` is now): a
   * data-modifying WITH runs to completion whether or not the query reads it.
   */
  private readonly claimGates: string;
  /** The claim statements prepared on each connection (`claimRows`), to EXECUTE by name. */
  private readonly preparedOn = new WeakMap<pg.PoolClient, Set<string>>();
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
    this.claimGates = claimGatesQuery(this.ctx.t);
    this.logId = logId;
    this.listener = new Listener(ctx, url, pollIntervalMs);
    this.announced = this.listener.announced.bind(this.listener);
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

  async claim(params: ClaimParams): Promise<JobRecord[]> {
    // A claim whose connection failed before COMMIT leased nothing, so it runs again. One whose
    // COMMIT went unanswered looks for its leases in the rows: if they are there it returns
    // them (else they would sit leased to nobody until their leases expired); if they are not,
    // or the rows cannot be read either, it runs again. That cannot lease a job twice: a job
    // leased once is no longer Pending.
    return this.ctx.retrying(async () => {
      try {
        return this.announced(await this.claimOnce(params));
      } catch (error) {
        if (!(error instanceof InDoubt)) throw error;
        const leased = error.result as JobRecord[];
        const stored = await this.ctx.storedRecords(leased.map((r) => r.jobId));
        const landed = leased.filter((r) => stored.get(r.jobId)?.equals(encodeRecord(r)));
        if (landed.length === 0 && leased.length > 0) throw error.cause;
        return this.announced(landed);
      }
    });
  }

  private async claimOnce(params: ClaimParams): Promise<JobRecord[]> {
    if (!Number.isSafeInteger(params.now)) throw new Error(`claim: now ${params.now} is not an integer`);
    // The first round trip begins the transaction, opens the gates that are due (so the ready
    // index holds every eligible job) and reads which limits exist: none (the usual case) leaves
    // the claim one statement over `jobs_ready`, whose rows are all unlimited. BEGIN and the rest
    // travel as one simple-protocol query, which takes no parameters (`now` is a checked
    // integer). Prepared, the rest is EXECUTEd there by name, planned once; a connection runs it
    // by name once first, after a BEGIN of its own, to prepare it.
    // The claim's first statement (the key-order scan, or the fair claim's first round) rides in
    // the same round trip once this connection has it prepared: EXECUTEd with its values written
    // as literals (`sqlLiteral`). When limits exist, its rows (locked, unlimited) go unused.
    const gates = this.claimGates;
    const fair = params.fair === true && params.scope.type === 'any';
    const first = fair
      ? this.fairFirstRound(params.kinds, params.limit)
      : this.keyOrderQuery(params.scope, params.kinds, params.limit);
    let prepareGates = false;
    let firstRode = false;
    const begin = (db: Db): string => {
      if (!this.ctx.prepare) return `BEGIN; ${gates.replace('$1', String(params.now))}`;
      const prepared = this.preparedOn.get(db);
      if (prepared?.has(statementName(gates)) !== true) {
        prepareGates = true;
        return 'BEGIN';
      }
      const head = `BEGIN; EXECUTE ${statementName(gates)}(${params.now})`;
      if (first === null || !prepared.has(statementName(first.text))) return head;
      firstRode = true;
      return `${head}; EXECUTE ${statementName(first.text)}(${first.values.map(sqlLiteral).join(', ')})`;
    };
    return this.ctx.tx(async (db, begun) => {
      let limited: { kind_prefix: string }[];
      if (prepareGates) {
        limited = await this.claimRows<{ kind_prefix: string }>(db, gates, [params.now]);
      } else {
        limited = (begun[begun.length - (firstRode ? 2 : 1)]?.rows ?? []) as { kind_prefix: string }[];
      }
      const firstRows = firstRode ? ((begun[begun.length - 1]?.rows ?? []) as FairRow[]) : null;
      const lanes = limited.map((row) => row.kind_prefix).filter((lane) => laneMayServe(lane, params.kinds));
      let records: JobRecord[];
      if (lanes.length > 0) {
        records = await this.limitedRecords(db, params, lanes);
      } else {
        const rows = fair
          ? await this.fairRows(db, params.kinds, params.limit, firstRows)
          : (firstRows ?? (await this.keyOrderRows(db, params.scope, params.kinds, params.limit)));
        records = rows.map((row) => this.ctx.decode(row)).filter((r): r is JobRecord => r !== null);
      }
      const leased = records.map((record) => params.lease(record));
      await writeMany(
        this.ctx,
        db,
        leased.map((record) => ({ record, expected: null })),
        params.now,
      );
      return leased;
    }, begin);
  }

  /**
   * A claim that may take from limited lanes (`lanes`: those its kinds may serve). Their rows of
   * `kind_limits` are locked first, in prefix order, so limited claims of every server take
   * turns per lane, and the statements after see every lease the claims before them made. Then
   * each lane's room (`LaneBudget`: concurrency less leased, whole tokens), the candidates (the
   * unlimited ones and at most the room of each lane with room; a lane without room is not
   * read), the claim rule over them in the claim's order, and the buckets spent.
   */
  private async limitedRecords(db: Db, params: ClaimParams, lanes: readonly string[]): Promise<JobRecord[]> {
    const { rows: limitRows } = await db.query<LimitRow>(
      `SELECT ${LIMIT_COLUMNS} FROM ${this.t}.kind_limits WHERE kind_prefix = ANY($1::text[])
       ORDER BY kind_prefix FOR UPDATE`,
      [lanes],
    );
    const { rows: counts } = await db.query<{ lane: string; n: string }>(
      `SELECT lane, count(*) AS n FROM ${this.t}.jobs WHERE state = 1 AND lane = ANY($1::text[]) GROUP BY lane`,
      [lanes],
    );
    const limits = limitRows.map(limitOfRow);
    const leased = new Map(counts.map((row) => [row.lane, Number(row.n)]));
    const buckets = new Map(limitRows.map((row) => [row.kind_prefix, bucketOfRow(row)]));
    const bucketOf = (lane: string): TokenBucket | null => buckets.get(lane) ?? null;
    const budget = new LaneBudget(limits, (lane) => leased.get(lane) ?? 0, bucketOf, params.now);
    const rooms = limits.map((limit) =>
      Math.min(
        params.limit,
        laneRoom(limit, leased.get(limit.kindPrefix) ?? 0, bucketOf(limit.kindPrefix), params.now),
      ),
    );
    const laneArgs = [limits.map((l) => l.kindPrefix), rooms];
    const candidates = async (scope: ScopeFilter): Promise<JobRecord[]> => {
      const query = laneClaimQuery(this.t, scope, params.kinds);
      const { rows } = await db.query<ClaimRow>(
        named(this.ctx.prepare, query.text, [params.limit, ...laneArgs, ...query.values]),
      );
      return rows.map((row) => this.ctx.decode(row)).filter((r): r is JobRecord => r !== null);
    };
    let chosen: JobRecord[];
    if (params.fair === true && params.scope.type === 'any') {
      chosen = [];
      if (leasesSystemKinds(params.kinds)) {
        chosen = pickWithinLimits(await candidates(SYSTEM_SCOPE), params.limit, budget);
      }
      const query = fairLaneClaimQuery(this.t, params.kinds);
      const { rows } = await db.query<ClaimRow & { scope: Buffer }>(
        named(this.ctx.prepare, query.text, [params.limit, ...laneArgs, ...query.values]),
      );
      const tenantJobs = rows
        .map((row) => ({ record: this.ctx.decode(row), scope: row.scope.toString('hex'), system: false }))
        .filter((c): c is { record: JobRecord; scope: string; system: false } => c.record !== null)
        .sort((a, b) => compareKeyOrder(a.record, b.record));
      const picked = fairPick(
        tenantJobs,
        params.limit - chosen.length,
        this.fairCursor === null ? null : this.fairCursor.toString('hex'),
        (c) => budget.take(c.record.kind),
      );
      chosen.push(...picked.chosen.map((c) => c.record));
      if (picked.cursor !== null) this.fairCursor = Buffer.from(picked.cursor, 'hex');
    } else {
      chosen = pickWithinLimits(await candidates(params.scope), params.limit, budget);
    }
    const spent = budget.spent(bucketOf, params.now);
    if (spent.size > 0) {
      await db.query(
        `UPDATE ${this.t}.kind_limits AS kl SET tokens = u.tokens, refilled_at = u.refilled_at
         FROM unnest($1::text[], $2::float8[], $3::bigint[]) AS u(kind_prefix, tokens, refilled_at)
         WHERE kl.kind_prefix = u.kind_prefix`,
        [[...spent.keys()], [...spent.values()].map((b) => b.tokens), [...spent.values()].map((b) => b.refilledAt)],
      );
    }
    return chosen;
  }

  private async keyOrderRows(
    db: Db,
    scope: ScopeFilter,
    kinds: readonly string[] | null,
    limit: number,
  ): Promise<ClaimRow[]> {
    const query = this.keyOrderQuery(scope, kinds, limit);
    return this.claimRows<ClaimRow>(db, query.text, query.values);
  }

  /** The key-order claim, as `keyOrderRows` runs it. */
  private keyOrderQuery(
    scope: ScopeFilter,
    kinds: readonly string[] | null,
    limit: number,
  ): { text: string; values: unknown[] } {
    const query = claimQuery(this.t, scope, kinds);
    return { text: query.text, values: [limit, ...query.values] };
  }

  /** The fair claim's first round (`fairRows`), or `null` when system jobs come first (another statement). */
  private fairFirstRound(kinds: readonly string[] | null, limit: number): { text: string; values: unknown[] } | null {
    if (leasesSystemKinds(kinds)) return null;
    return fairClaimQuery(this.t, kinds, this.fairCursor, limit, []);
  }

  /**
   * Run a claim statement (the gates, a scan) by name, and remember it is prepared on `db`, so
   * the next claim there may EXECUTE it in its BEGIN round trip.
   */
  private async claimRows<R extends pg.QueryResultRow>(db: Db, text: string, values: unknown[]): Promise<R[]> {
    const { rows } = await db.query<R>(named(this.ctx.prepare, text, values));
    if (this.ctx.prepare) {
      const prepared = this.preparedOn.get(db) ?? new Set<string>();
      prepared.add(statementName(text));
      this.preparedOn.set(db, prepared);
    }
    return rows;
  }

  /**
   * Rows in the fair order (`core/fair-order.ts`): system jobs first, then tenants in turn from the
   * cursor on, wrapping around. A round finds the next tenants with ready work (one index probe
   * each), then locks as many jobs of each as the round may need, and takes them round by round:
   * one job per tenant per turn. A round that stops short because tenants ran out of work is
   * followed by another, so a single busy tenant costs a few statements, not one per job.
   */
  private async fairRows(
    db: Db,
    kinds: readonly string[] | null,
    limit: number,
    firstRound: readonly FairRow[] | null = null,
  ): Promise<ClaimRow[]> {
    const rows: ClaimRow[] = [];
    let given = firstRound;
    if (leasesSystemKinds(kinds)) {
      rows.push(...(await this.keyOrderRows(db, SYSTEM_SCOPE, kinds, limit)));
    }
    while (rows.length < limit) {
      const remaining = limit - rows.length;
      const taken = rows.map((row) => row.job_id);
      const query = fairClaimQuery(this.t, kinds, this.fairCursor, remaining, taken);
      const locked = given ?? (await this.claimRows<FairRow>(db, query.text, query.values));
      given = null;
      if (locked.length === 0) break;
      // Rows come in tenant order (from the cursor on), each tenant's in key order: number
      // each tenant's turns, and take the jobs turn by turn.
      const turns = new Map<string, number>();
      const ordered = locked
        .map((row) => {
          const turn = turns.get(row.ord) ?? 0;
          turns.set(row.ord, turn + 1);
          return { row, turn, ord: Number(row.ord) };
        })
        .sort((x, y) => x.turn - y.turn || x.ord - y.ord)
        .slice(0, remaining);
      for (const { row } of ordered) {
        rows.push({ job_id: row.job_id, record: row.record });
        this.fairCursor = row.scope;
      }
    }
    return rows;
  }

  async insert(drafts: readonly JobDraft[], now: Micros): Promise<InsertOutcome[]> {
    // One INSERT statement is atomic by itself: no transaction round trips needed. Run again
    // after a lost answer it cannot create a job twice: each draft carries its job id, and a
    // row already holding that id is the earlier try's (see `insertJobs`).
    return this.ctx.retrying(() =>
      insertJobs(this.ctx.pool, this.ctx.schema, drafts, now, {
        origin: this.ctx.origin,
        createdAt: this.ctx.createdAt,
        log: this.ctx.logging,
        prepare: this.ctx.prepare,
        binaryArrays: true,
      }),
    );
  }

  async update(jobId: string, change: (current: JobRecord) => Change, now: Micros): Promise<UpdateOutcome> {
    const outcome = await this.updateOnce(jobId, change, now);
    this.announced([outcome.record]);
    return outcome;
  }

  private async updateOnce(jobId: string, change: (current: JobRecord) => Change, now: Micros): Promise<UpdateOutcome> {
    // Most changes (heartbeat, complete, fail, reap) touch one row: read it, apply the change,
    // and write it back only if the row is still what was read (compare-and-set on the
    // record), two round trips instead of a transaction's four; one when this store leased
    // the job and the row still holds that lease (`updateLease`). A change that creates jobs,
    // or a lost race, takes the locked transaction. Run again after a failed connection, it
    // reads the row afresh: only a write whose fate is known lets a failure through to here.
    return this.ctx.retrying(async () => {
      const lease = this.ctx.leases.get(jobId);
      if (lease !== undefined) {
        const outcome = await this.updateLease(jobId, lease, change, now);
        if (outcome !== null) return outcome;
      }
      const [row] = (
        await this.ctx.pool.query<{ record: Buffer }>(
          named(this.ctx.prepare, `SELECT record FROM ${this.t}.jobs WHERE job_id = $1`, [jobId]),
        )
      ).rows;
      if (row === undefined) throw notFound(`job ${jobId}`);
      const next = change(decodeRecord(row.record, `job ${jobId}`));
      if ((next.successors ?? []).length > 0) return this.lockedUpdate(jobId, change, now);
      const { written, inDoubt } = await this.casWrite([{ record: next.record, expected: row.record }], now);
      if (inDoubt.has(jobId)) throw writeInDoubt(jobId);
      if (written.has(jobId)) return { record: next.record, successors: [] };
      return this.lockedUpdate(jobId, change, now);
    });
  }

  /**
   * A change to a job this store leased, worked out from the lease as this store wrote it and
   * written if the row still holds exactly that: one round trip. `null` when the row must be
   * read instead: it changed since (the compare failed), or the change refused the lease as
   * remembered, which only the row can confirm, or the change creates jobs.
   */
  private async updateLease(
    jobId: string,
    lease: Buffer,
    change: (current: JobRecord) => Change,
    now: Micros,
  ): Promise<UpdateOutcome | null> {
    let next: Change;
    try {
      next = change(decodeRecord(lease, `job ${jobId}`));
    } catch {
      this.ctx.leases.forget(jobId);
      return null;
    }
    if ((next.successors ?? []).length > 0) return null;
    const { written, inDoubt } = await this.casWrite([{ record: next.record, expected: lease }], now);
    if (inDoubt.has(jobId)) throw writeInDoubt(jobId);
    return written.has(jobId) ? { record: next.record, successors: [] } : null;
  }

  /**
   * One SELECT for the jobs this store did not lease itself (`leases`), the changes applied
   * here, then one UPDATE that writes each job whose row is still as read or as leased
   * (compare-and-set per row, as in `update`): one or two round trips for the whole batch. A
   * job whose row changed in between, or whose remembered lease refused an item, has its
   * items redone one by one through `update`, which reads it again.
   */
  async updateMany(items: readonly UpdateItem[], now: Micros): Promise<ItemResult<JobRecord>[]> {
    if (items.length === 0) return [];
    const stored = new Map<string, Buffer>();
    const unknown = new Set<string>();
    for (const { jobId } of items) {
      const lease = this.ctx.leases.get(jobId);
      if (lease !== undefined) stored.set(jobId, lease);
      else unknown.add(jobId);
    }
    const remembered = new Set(stored.keys());
    if (unknown.size > 0) {
      for (const [jobId, value] of await this.ctx.retrying(() => this.ctx.storedRecords([...unknown]))) {
        stored.set(jobId, value);
      }
    }
    const latest = new Map<string, JobRecord>();
    /** Jobs whose items run again against the row: their write missed, or a remembered lease refused one. */
    const redo = new Set<string>();
    const results = items.map((item): ItemResult<JobRecord> => {
      try {
        const raw = stored.get(item.jobId);
        if (raw === undefined) throw notFound(`job ${item.jobId}`);
        const { record } = item.change(latest.get(item.jobId) ?? decodeRecord(raw, `job ${item.jobId}`));
        latest.set(item.jobId, record);
        return itemOk(record);
      } catch (error) {
        if (remembered.has(item.jobId)) redo.add(item.jobId);
        return itemFailed(error);
      }
    });
    for (const jobId of redo) this.ctx.leases.forget(jobId);
    const writes = [...latest.values()].filter((record) => !redo.has(record.jobId));
    const { written, inDoubt } = await this.casWrite(
      writes.map((record) => ({ record, expected: stored.get(record.jobId) as Buffer })),
      now,
    );
    this.announced(writes.filter((record) => written.has(record.jobId)));
    for (const record of writes) if (!written.has(record.jobId)) redo.add(record.jobId);
    for (const [i, item] of items.entries()) {
      if (!redo.has(item.jobId)) continue;
      if (inDoubt.has(item.jobId)) {
        results[i] = itemFailed(writeInDoubt(item.jobId));
        continue;
      }
      try {
        results[i] = itemOk((await this.update(item.jobId, item.change, now)).record);
      } catch (error) {
        results[i] = itemFailed(error);
      }
    }
    return results;
  }

  /**
   * Read the row under a lock, apply the change, write it and create its successors, in one
   * transaction. A connection failure before COMMIT rolled it all back, so it passes to the
   * caller, which runs the update again. A COMMIT gone unanswered is settled by the row: it
   * holds the new record (committed, successors and all: the answer stands), the record as
   * read (nothing committed: run again), or something else (overtaken since; whether this
   * change is in it cannot be told, so `unavailable`).
   */
  private async lockedUpdate(
    jobId: string,
    change: (current: JobRecord) => Change,
    now: Micros,
  ): Promise<UpdateOutcome> {
    try {
      return (
        await this.ctx.tx(async (db) => {
          const { rows } = await db.query<{ record: Buffer }>(
            named(this.ctx.prepare, `SELECT record FROM ${this.t}.jobs WHERE job_id = $1 FOR UPDATE`, [jobId]),
          );
          const row = rows[0];
          if (row === undefined) throw notFound(`job ${jobId}`);
          const next = change(decodeRecord(row.record, `job ${jobId}`));
          // The row is locked, so the compare always holds.
          await writeMany(this.ctx, db, [{ record: next.record, expected: row.record }], now);
          const successors = await insertJobs(db, this.ctx.schema, next.successors ?? [], now, {
            origin: this.ctx.origin,
            createdAt: this.ctx.createdAt,
            updated: next.record,
            log: this.ctx.logging,
            binaryArrays: true,
          });
          return { outcome: { record: next.record, successors }, read: row.record };
          // The write locks' share (`writeLocks`) before the row lock: taken after it, a pause or
          // a limit waiting for this row would wait for this transaction, which waits for it.
        }, `BEGIN; LOCK TABLE ${this.t}.kind_pauses, ${this.t}.kind_limits IN ROW SHARE MODE`)
      ).outcome;
    } catch (error) {
      if (!(error instanceof InDoubt)) throw error;
      const { outcome, read } = error.result as { outcome: UpdateOutcome; read: Buffer };
      const stored = (await this.ctx.retrying(() => this.ctx.storedRecords([jobId]))).get(jobId);
      if (stored?.equals(encodeRecord(outcome.record))) return outcome;
      if (stored?.equals(read)) throw error.cause;
      throw writeInDoubt(jobId);
    }
  }

  /**
   * `writeMany` of compare-and-set rows on the pool, each statement committing on its own.
   * When the answer is lost, the rows tell what happened: a row holding its new record was
   * written; the rest are written again with the same compare, which holds only for a row
   * still as read, so a write that did land is never applied on top of itself. A row that
   * matches neither was overtaken, and whether this write landed first cannot be told: it
   * is `inDoubt`, and its caller answers `unavailable` rather than risk a second effect.
   */
  private async casWrite(
    rows: readonly { readonly record: JobRecord; readonly expected: Buffer }[],
    now: Micros,
  ): Promise<{ written: Set<string>; inDoubt: Set<string> }> {
    try {
      return { written: await writeMany(this.ctx, this.ctx.pool, rows, now), inDoubt: new Set() };
    } catch (error) {
      if (!isConnectionFailure(error)) throw error;
      this.ctx.logger.warn(
        { err: (error as Error).message },
        'postgres connection failed during a write; checking the rows',
      );
    }
    const written = new Set<string>();
    let unsettled = rows;
    for (let attempt = 2; ; attempt++) {
      try {
        const stored = await this.ctx.storedRecords(unsettled.map((row) => row.record.jobId));
        for (const { record } of unsettled)
          if (stored.get(record.jobId)?.equals(encodeRecord(record))) written.add(record.jobId);
        unsettled = unsettled.filter((row) => !written.has(row.record.jobId));
        for (const id of await writeMany(this.ctx, this.ctx.pool, unsettled, now)) written.add(id);
        return { written, inDoubt: new Set(unsettled.map((row) => row.record.jobId).filter((id) => !written.has(id))) };
      } catch (error) {
        if (!isConnectionFailure(error) || attempt >= CONNECTION_TRIES) throw pgFailure(error);
      }
    }
  }

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

/** Key order: (scope, priority, created_at, job_id), as the `jobs_key` index sorts. */
function compareKeyOrder(a: JobRecord, b: JobRecord): number {
  return (
    Buffer.compare(scopeOfTenant(a.tenant), scopeOfTenant(b.tenant)) ||
    a.priority - b.priority ||
    a.createdAt - b.createdAt ||
    (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0)
  );
}

/**
 * Store new versions of jobs in one statement however many there are. A row with an
 * `expected` record is written only if its stored record is still that one (compare-and-set
 * on the whole record); one without is a row this transaction holds locked. Jobs that are
 * Pending again (retried, reaped, backing off) also notify other servers' waiters, in the
 * same statement. Returns the ids written.
 */
export async function writeMany(
  ctx: StoreContext,
  db: Pick<pg.ClientBase, 'query'>,
  rows: readonly { readonly record: JobRecord; readonly expected: Buffer | null }[],
  now: Micros,
): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const records = rows.map((r) => r.record);
  const pending = records.filter((r) => r.state === JobState.Pending);
  const encoded = encodeWrites(records, ctx.logging);
  const statement = withLog(
    ctx.t,
    updateJobsText(ctx.t, pending.length > 0),
    [
      BINARY_ARRAYS.uuid(records.map((r) => r.jobId)),
      BINARY_ARRAYS.bytea(rows.map((r) => r.expected)),
      BINARY_ARRAYS.int2(records.map((r) => r.state)),
      BINARY_ARRAYS.int8(records.map((r) => closedGate(r, now))),
      BINARY_ARRAYS.int8(records.map((r) => r.leaseDeadline)),
      BINARY_ARRAYS.text(records.map((r) => r.workerId)),
      BINARY_ARRAYS.int8(records.map((r) => finishedAt(r))),
      BINARY_ARRAYS.bytea(encoded.values),
      ...(pending.length > 0 ? [ctx.schema.channel, noticePayload(ctx.origin, workNotices(pending, now))] : []),
    ],
    encoded.entries,
    BINARY_ARRAYS,
  );
  const { rows: written } = await db.query<{ job_id: string }>(named(ctx.prepare, statement.text, statement.values));
  const ids = new Set(written.map((row) => row.job_id));
  for (const [i, record] of records.entries()) {
    if (ids.has(record.jobId)) ctx.leases.remember(record, encoded.values[i] as Buffer);
    else ctx.leases.forget(record.jobId);
  }
  return ids;
}

/** A PostgreSQL store's log position: `p1.<store id>.<xid>.<seq>`. */
const LOG_FORMAT = 'p1';

function compareXidSeq(a: readonly [bigint, bigint], b: readonly [bigint, bigint]): number {
  return a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] === b[1] ? 0 : a[1] < b[1] ? -1 : 1;
}
