/**
 * The PostgreSQL backend: the same seam, the same core transitions, the same
 * `[version][msgpack]` record, so several servers can share one store.
 *
 * Each seam operation is atomic. Claims take rows with `FOR UPDATE SKIP
 * LOCKED` in one transaction, so two servers never lease the same job and
 * never wait on each other. A fenced update applies the core transition to the
 * row as read and writes it back only if the stored record is still that one
 * (one UPDATE, compare-and-set on the whole record: state, worker, generation
 * and all), or, when it creates jobs too, under a row lock in one transaction;
 * either way a stale submission through any server is rejected. A worker's batch
 * of results is one SELECT and one such UPDATE for all of them. Enqueue is one
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
 *
 * Connections fail: PostgreSQL restarts, fails over, or ends sessions
 * (`pg_terminate_backend`, `idle_session_timeout`). No failure may end the
 * process, so the pool, every pooled connection and the LISTEN connection
 * all listen for errors. A call whose connection failed runs again on
 * another where that cannot apply a change twice (reads, claims, inserts,
 * and compare-and-set writes whose rows show whether they landed); when the
 * database stays away, or a write's fate cannot be known, it answers
 * `unavailable` (`pgFailure`), which callers retry after a pause.
 */
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { CorruptRecordError, ErrorCode, notFound, storeClosed, TelhaError } from '../../core/errors.ts';
import {
  laneTokenDue,
  laneRoom,
  admitKindLimit,
  compareKindLimits,
  LaneBudget,
  laneMayServe,
  limitStatus,
  pickWithinLimits,
  type KindLimit,
  type KindLimitStatus,
  type TokenBucket,
} from '../../core/kind-limits.ts';
import { fairPick } from '../../core/fair-order.ts';
import { SYSTEM_KIND_PREFIX } from '../../core/limits.ts';
import {
  admitPause,
  comparePauses,
  pauseInFilter,
  type Pause,
  type PauseBounds,
  type PauseScope,
} from '../../core/pauses.ts';
import { decodePause, encodePause, pauseScopeBytes } from '../../codec/pauses.ts';
import { scheduleExists, tooManySchedules, type Schedule, type ScheduleFiring } from '../../core/schedules.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import { enqueue, leasesSystemKinds } from '../../core/transitions.ts';
import { withCreatedAt } from '../../core/drafts.ts';
import {
  formatPosition,
  logEntryExpired,
  logMatches,
  logsTransition,
  parsePosition,
  positionPruned,
  type LogEntry,
  type LogFilter,
  type LogPage,
  type LogPruneParams,
} from '../../core/transitions-log.ts';
import {
  finishedAt,
  itemFailed,
  itemOk,
  JobState,
  SYSTEM_SCOPE,
  workNotices,
  type ItemResult,
  type JobRecord,
  type Micros,
  type QueueScope,
  type ScopeFilter,
  type WorkNotice,
} from '../../core/types.ts';
import { decodeJobKey, pageTokenAfter, pageTokenKey, scopeBytes, scopeOfTenant } from '../../codec/keys.ts';
import { decodeSchedule, encodeSchedule, schedulePageKey, schedulePageToken } from '../../codec/schedules.ts';
import { decodeRecord, encodeRecord } from '../../codec/value.ts';
import { idempotencySlot } from '../../core/scope.ts';
import { CreatedAtSequence } from '../shared.ts';
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
import { BINARY_ARRAYS, TEXT_ARRAYS } from './binary-arrays.ts';
import { isConnectionFailure, pgFailure } from './failures.ts';
import { migrate, schemaTable } from './migrations.ts';
import { WrittenLeases } from './written-leases.ts';
import {
  claimGatesQuery,
  claimQuery,
  fairClaimQuery,
  fairLaneClaimQuery,
  laneClaimQuery,
  type ClaimRow,
  type FairRow,
} from './sql/claims.ts';
import {
  bucketOfRow,
  laneSql,
  LIMIT_COLUMNS,
  limitOfRow,
  pauseCovers,
  pausedSql,
  writeLocks,
  type LimitRow,
} from './sql/controls.ts';
import { unseenArray } from './sql/unseen-array.ts';
import { closedGate, columns, encodeWrites, withLog } from './sql/writes.ts';

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

type Db = pg.PoolClient;

/** The least time between two log notifications of one server: what it may add to a watcher's latency elsewhere. */
const LOG_NOTICE_GAP_MS = 5;
/**
 * How long another server's word that its readers follow the log holds (`logFollowed`): it says
 * so again every third of this while they do, and when a server that starts listening asks.
 */
const FOLLOWERS_NOTICE_TTL_MS = 30_000;
/** A PostgreSQL store's log position: `p1.<store id>.<xid>.<seq>`. */
const LOG_FORMAT = 'p1';
/** NOTIFY payloads must stay under 8,000 bytes; past this, say "look again" instead of what. */
const MAX_NOTICE_BYTES = 7_000;
/** What the store's connections call themselves in `pg_stat_activity`, unless the URL says otherwise. */
const PG_APPLICATION_NAME = 'telha';
/**
 * Tries of a call whose connection failed. A restart ends every pooled connection at once and
 * the pool drops each as its error arrives, so a second or third try finds a live (or new) one;
 * when those fail too the database is away, and the caller hears `unavailable` and backs off.
 */
const CONNECTION_TRIES = 3;

/**
 * The memory for the leases a store remembers (`WrittenLeases`): a few thousand jobs in flight
 * with payloads of a few KiB, and a bound on the memory however large the payloads.
 */
const WRITTEN_LEASES_BYTES = 64 * 1024 * 1024;

/**
 * A COMMIT sent whose answer never came: the transaction may or may not have committed.
 * `result` is what the transaction's work returned, for the caller to look for in the rows.
 */
class InDoubt<T> extends Error {
  constructor(
    readonly result: T,
    cause: unknown,
  ) {
    super('the answer to COMMIT was lost', { cause });
  }
}

/** Where a store's rows live and where its servers talk. */
export interface PgSchema {
  /** The quoted schema, e.g. `"telha"`, to prefix table names with. */
  readonly table: string;
  /** The LISTEN/NOTIFY channel of this schema. */
  readonly channel: string;
}

export function pgSchema(schema: string): PgSchema {
  // Channel names are identifiers of at most 63 bytes; a schema name may be that long already.
  const digest = createHash('sha256').update(schema).digest('hex').slice(0, 24);
  return { table: schemaTable(schema), channel: `telha_work_${digest}` };
}

/** The message a write sends to every server: who sent it (to skip its own) and what work appeared. */
function noticePayload(origin: string, notices: readonly WorkNotice[]): string {
  const text = JSON.stringify({ o: origin, w: notices.map((n) => [n.tenant, n.kind, n.ready ? 1 : 0, n.count]) });
  return Buffer.byteLength(text) <= MAX_NOTICE_BYTES ? text : JSON.stringify({ o: origin, w: 'all' });
}

/** The message a server sends after committing transitions: look at the log again. */
function logNoticePayload(origin: string): string {
  return JSON.stringify({ o: origin, l: 1 });
}

/** The message of a server whose readers follow the log: tell me of your transitions (`f`); or who does (`q`)? */
function followersPayload(origin: string, ask: boolean): string {
  return JSON.stringify(ask ? { o: origin, q: 1 } : { o: origin, f: 1 });
}

/**
 * A notification: who sent it, and what work appeared (`null`: none, only log entries), or that
 * its readers follow the log (`followers`) or it asks who has such readers (`ask`).
 */
function parseNotice(
  payload: string,
): { origin: string; work: WorkNotice[] | 'all' | null; followers?: true; ask?: true } | null {
  try {
    const parsed = JSON.parse(payload) as { o?: unknown; w?: unknown; l?: unknown; f?: unknown; q?: unknown };
    if (typeof parsed.o !== 'string') return null;
    if (parsed.f === 1) return { origin: parsed.o, work: null, followers: true };
    if (parsed.q === 1) return { origin: parsed.o, work: null, ask: true };
    if (parsed.l === 1) return { origin: parsed.o, work: null };
    if (!Array.isArray(parsed.w)) return { origin: parsed.o, work: 'all' };
    const work = (parsed.w as unknown[][]).map(([tenant, kind, ready, count]) => ({
      tenant: typeof tenant === 'string' ? tenant : null,
      kind: String(kind),
      ready: ready === 1,
      count: Number(count),
    }));
    return { origin: parsed.o, work };
  } catch {
    return null;
  }
}

export class PostgresJobStore implements JobStore {
  readonly backend = 'postgres';
  readonly pollIntervalMs: number;
  private corruptRows = 0;
  private readonly t: string;
  /** Marks this store's own notifications, which its queue has announced already. */
  private readonly origin = randomUUID();
  private onWork: ((notices: readonly WorkNotice[] | 'all') => void) | null = null;
  private onLog: (() => void) | null = null;
  private readonly logging: boolean;
  /** A log notification is on its way; `announceAgain`: send one more when it is done. */
  private announcing = false;
  /** Readers in this process follow the log (`logFollowed`); while they do, a timer repeats the word. */
  private followedHere = false;
  private followersTimer: NodeJS.Timeout | null = null;
  /** Until when (`performance.now()`) another server's readers follow the log: log notices go out only before it. */
  private followedElsewhereUntil = 0;
  private logNotices = 0;
  private announceAgain = false;
  private listener: pg.Client | null = null;
  private listenerBackendPid: number | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private closing = false;
  /**
   * created_at of this server's jobs: strictly increasing per server, following the clock, so
   * no enqueue waits on a row shared by every server. Jobs of different servers order by their
   * servers' clocks, ties by id. Its high-water mark is saved in the meta row (every second and
   * at close) so a restart with a clock behind it still continues above it.
   */
  private readonly createdAt: CreatedAtSequence;
  /** The fair order's cursor: the scope of the tenant this store's fair claims served last. */
  private fairCursor: Buffer | null = null;
  /**
   * The claim's gate opening and its read of the limits, in one statement (`$1` is now): a
   * data-modifying WITH runs to completion whether or not the query reads it.
   */
  private readonly claimGates: string;
  /** The claim statements prepared on each connection (`claimRows`), to EXECUTE by name. */
  private readonly preparedOn = new WeakMap<pg.PoolClient, Set<string>>();
  private savedCreatedAt: Micros;
  private readonly saveTimer: NodeJS.Timeout;
  /** The leases this store wrote last, which a worker's result starts from instead of reading the row. */
  private readonly leases = new WrittenLeases(WRITTEN_LEASES_BYTES);

  private constructor(
    private readonly pool: pg.Pool,
    /** The `storage.schema` this store's tables are in. */
    readonly schemaName: string,
    private readonly schema: PgSchema,
    private readonly url: string,
    private readonly logger: Logger,
    pollIntervalMs: number,
    lastCreatedAt: Micros,
    /** Names this store in log positions (`job_transitions_meta.store_id`). */
    private readonly logId: string,
    logging: boolean,
    /** `storage.prepared_statements` (see `named`). */
    private readonly prepare: boolean,
  ) {
    this.logging = logging;
    this.t = schema.table;
    this.claimGates = claimGatesQuery(this.t);
    this.pollIntervalMs = pollIntervalMs;
    this.createdAt = new CreatedAtSequence(lastCreatedAt);
    this.savedCreatedAt = lastCreatedAt;
    this.saveTimer = setInterval(() => void this.saveCreatedAt().catch(() => undefined), 1_000);
    this.saveTimer.unref();
  }

  private async saveCreatedAt(): Promise<void> {
    const last = this.createdAt.current;
    if (last <= this.savedCreatedAt) return;
    await this.pool.query(`UPDATE ${this.t}.meta SET last_created_at = GREATEST(last_created_at, $1) WHERE id = 1`, [
      last,
    ]);
    this.savedCreatedAt = Math.max(this.savedCreatedAt, last);
  }

  static async open(options: PostgresStoreOptions): Promise<PostgresJobStore> {
    const schemaName = options.schema ?? 'telha';
    const schema = pgSchema(schemaName);
    const logger = options.logger ?? silentLogger;
    const pool = new pg.Pool({
      connectionString: options.url,
      fallback_application_name: PG_APPLICATION_NAME,
      max: options.poolSize ?? 10,
      ...(options.durability === 'process' ? { options: '-c synchronous_commit=off' } : {}),
    });
    // A connection PostgreSQL ends (restart, failover, pg_terminate_backend) emits 'error', and
    // an 'error' with no listener ends the process. The pool listens only while a connection
    // is idle (then drops it and emits 'error' itself); while one is handed out nobody does,
    // and a promise-based `pool.connect()` leaves a gap even for a caller that listens at once:
    // the rest of the socket chunk that released the connection, often the FATAL that follows a
    // finished statement, is read before the caller's code runs (node-postgres issue 2762).
    // So every connection gets a listener of its own for its whole life; the statement that was
    // running, or the next one, fails and says why.
    pool.on('connect', (client) =>
      client.on('error', (error) => logger.debug({ err: error.message }, 'postgres connection failed')),
    );
    pool.on('error', (error) =>
      logger.warn({ err: error.message }, 'postgres ended an idle pooled connection; it was dropped'),
    );
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
    const store = new PostgresJobStore(
      pool,
      schemaName,
      schema,
      options.url,
      logger,
      options.pollIntervalMs ?? 1_000,
      lastCreatedAt,
      logId,
      options.transitionsLog ?? true,
      options.preparedStatements ?? true,
    );
    try {
      await store.listen();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  watch(onWork: (notices: readonly WorkNotice[] | 'all') => void): void {
    this.onWork = onWork;
  }

  /** Whether the LISTEN connection is up (while it is down, waiters fall back to polling). */
  get listening(): boolean {
    return this.listener !== null;
  }

  /** Log notifications this store sent (`announced`), for operators and tests. */
  get logNoticesSent(): number {
    return this.logNotices;
  }

  /** Whether another server said its readers follow the log, recently enough that it still holds. */
  get followedElsewhere(): boolean {
    return performance.now() < this.followedElsewhereUntil;
  }

  /** The backend process id of the LISTEN connection, for operators and tests. */
  get listenerPid(): number | null {
    return this.listener === null ? null : this.listenerBackendPid;
  }

  /** Connect the LISTEN connection; on loss, reconnect after the poll interval and tell waiters to look again. */
  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, fallback_application_name: PG_APPLICATION_NAME });
    const lost = (error?: Error): void => {
      if (this.listener !== client) return;
      this.listener = null;
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      if (this.closing) return;
      this.logger.warn(
        { err: error?.message ?? 'connection ended' },
        'postgres listener lost; polling until it is back',
      );
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => {
      const notice = message.payload === undefined ? null : parseNotice(message.payload);
      if (notice === null || notice.origin === this.origin) return;
      if (notice.followers === true) {
        this.followedElsewhereUntil = performance.now() + FOLLOWERS_NOTICE_TTL_MS;
        return;
      }
      if (notice.ask === true) {
        if (this.followedHere) this.noticeFollowers();
        return;
      }
      if (notice.work !== null) this.onWork?.(notice.work);
      // Any write of another process (a server, an application's transaction) may have appended.
      this.onLog?.();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.schema.channel}`);
      // Servers whose readers follow the log say so at once, rather than at their next repeat.
      await client.query('SELECT pg_notify($1, $2)', [this.schema.channel, followersPayload(this.origin, true)]);
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      this.listenerBackendPid = rows[0]?.pid ?? null;
    } catch (error) {
      // Not yet the listener, so `lost` ignores it: close it here, or its socket lingers.
      void client.end().catch(() => undefined);
      throw error;
    }
    this.listener = client;
  }

  private scheduleReconnect(): void {
    if (this.closing || this.reconnectTimer !== null) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.listen().then(
        // Work may have appeared while nobody listened.
        () => {
          this.onWork?.('all');
          this.onLog?.();
        },
        (error: unknown) => {
          this.logger.warn({ err: (error as Error).message }, 'postgres listener reconnect failed');
          this.scheduleReconnect();
        },
      );
    }, this.pollIntervalMs);
    this.reconnectTimer.unref();
  }

  /**
   * Run `work` in one transaction; any throw rolls it back. A connection that fails before
   * COMMIT leaves nothing behind (PostgreSQL rolls back the transaction of a session that
   * ends), so that failure is thrown as it is and the caller may run the work again. A COMMIT
   * whose answer is lost may have committed or not: that throws `InDoubt` with the
   * work's result, for the caller to look for in the rows.
   */
  private async tx<T>(
    work: (db: Db, begun: pg.QueryResult[]) => Promise<T>,
    begin: string | ((db: Db) => string) = 'BEGIN',
  ): Promise<T> {
    const db = await this.pool.connect();
    let broken = false;
    try {
      let result: T;
      try {
        // Several statements in `begin` answer with one result each.
        const text = typeof begin === 'string' ? begin : begin(db);
        const answer = (await db.query(text)) as unknown as pg.QueryResult | pg.QueryResult[];
        result = await work(db, Array.isArray(answer) ? answer : [answer]);
      } catch (error) {
        if (isConnectionFailure(error)) broken = true;
        else await db.query('ROLLBACK').catch(() => (broken = true));
        throw error;
      }
      try {
        await db.query('COMMIT');
      } catch (error) {
        if (!isConnectionFailure(error)) throw error;
        broken = true;
        throw new InDoubt(result, error);
      }
      return result;
    } finally {
      // A broken connection is closed, not handed to the next call.
      db.release(broken);
    }
  }

  /**
   * Run `work`, again on another connection if its connection failed, up to
   * `CONNECTION_TRIES` times; for work that cannot apply a change twice when run again.
   * Failures come out through `pgFailure`.
   */
  private async retrying<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      if (this.closing) throw storeClosed();
      try {
        return await work();
      } catch (error) {
        if (!isConnectionFailure(error) || attempt >= CONNECTION_TRIES) throw pgFailure(error);
        this.logger.warn({ err: (error as Error).message, attempt }, 'postgres connection failed; trying again');
      }
    }
  }

  /**
   * The stored record of each of `ids` that exists. After a write whose answer was lost, a row
   * holding exactly the bytes the write meant to store shows the job is as that write left it:
   * every transition records its time, so other bytes mean the write did not land, or was
   * overtaken since.
   */
  private async storedRecords(ids: readonly string[]): Promise<Map<string, Buffer>> {
    if (ids.length === 0) return new Map();
    const { rows } = await this.pool.query<{ job_id: string; record: Buffer }>(
      named(this.prepare, `SELECT job_id, record FROM ${this.t}.jobs WHERE job_id = ANY($1::uuid[])`, [ids]),
    );
    return new Map(rows.map((row) => [row.job_id, row.record]));
  }

  private decode(row: { job_id: string; record: Buffer }): JobRecord | null {
    try {
      return decodeRecord(row.record, `job ${row.job_id}`);
    } catch (error) {
      if (!(error instanceof CorruptRecordError)) throw error;
      this.corruptRows++;
      this.logger.warn({ key: error.key, err: error.message }, 'skipping corrupt job row');
      return null;
    }
  }

  async insert(drafts: readonly JobDraft[], now: Micros): Promise<InsertOutcome[]> {
    // One INSERT statement is atomic by itself: no transaction round trips needed. Run again
    // after a lost answer it cannot create a job twice: each draft carries its job id, and a
    // row already holding that id is the earlier try's (see `insertJobs`).
    return this.retrying(() =>
      insertJobs(this.pool, this.schema, drafts, now, {
        origin: this.origin,
        createdAt: this.createdAt,
        log: this.logging,
        prepare: this.prepare,
        binaryArrays: true,
      }),
    );
  }

  async claim(params: ClaimParams): Promise<JobRecord[]> {
    // A claim whose connection failed before COMMIT leased nothing, so it runs again. One whose
    // COMMIT went unanswered looks for its leases in the rows: if they are there it returns
    // them (else they would sit leased to nobody until their leases expired); if they are not,
    // or the rows cannot be read either, it runs again. That cannot lease a job twice: a job
    // leased once is no longer Pending.
    return this.retrying(async () => {
      try {
        return this.announced(await this.claimOnce(params));
      } catch (error) {
        if (!(error instanceof InDoubt)) throw error;
        const leased = error.result as JobRecord[];
        const stored = await this.storedRecords(leased.map((r) => r.jobId));
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
      if (!this.prepare) return `BEGIN; ${gates.replace('$1', String(params.now))}`;
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
    return this.tx(async (db, begun) => {
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
        records = rows.map((row) => this.decode(row)).filter((r): r is JobRecord => r !== null);
      }
      const leased = records.map((record) => params.lease(record));
      await this.writeMany(
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
        named(this.prepare, query.text, [params.limit, ...laneArgs, ...query.values]),
      );
      return rows.map((row) => this.decode(row)).filter((r): r is JobRecord => r !== null);
    };
    let chosen: JobRecord[];
    if (params.fair === true && params.scope.type === 'any') {
      chosen = [];
      if (leasesSystemKinds(params.kinds)) {
        chosen = pickWithinLimits(await candidates(SYSTEM_SCOPE), params.limit, budget);
      }
      const query = fairLaneClaimQuery(this.t, params.kinds);
      const { rows } = await db.query<ClaimRow & { scope: Buffer }>(
        named(this.prepare, query.text, [params.limit, ...laneArgs, ...query.values]),
      );
      const tenantJobs = rows
        .map((row) => ({ record: this.decode(row), scope: row.scope.toString('hex'), system: false }))
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
    const { rows } = await db.query<R>(named(this.prepare, text, values));
    if (this.prepare) {
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
    return this.retrying(async () => {
      const lease = this.leases.get(jobId);
      if (lease !== undefined) {
        const outcome = await this.updateLease(jobId, lease, change, now);
        if (outcome !== null) return outcome;
      }
      const [row] = (
        await this.pool.query<{ record: Buffer }>(
          named(this.prepare, `SELECT record FROM ${this.t}.jobs WHERE job_id = $1`, [jobId]),
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
      this.leases.forget(jobId);
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
      const lease = this.leases.get(jobId);
      if (lease !== undefined) stored.set(jobId, lease);
      else unknown.add(jobId);
    }
    const remembered = new Set(stored.keys());
    if (unknown.size > 0) {
      for (const [jobId, value] of await this.retrying(() => this.storedRecords([...unknown]))) {
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
    for (const jobId of redo) this.leases.forget(jobId);
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
        await this.tx(async (db) => {
          const { rows } = await db.query<{ record: Buffer }>(
            named(this.prepare, `SELECT record FROM ${this.t}.jobs WHERE job_id = $1 FOR UPDATE`, [jobId]),
          );
          const row = rows[0];
          if (row === undefined) throw notFound(`job ${jobId}`);
          const next = change(decodeRecord(row.record, `job ${jobId}`));
          // The row is locked, so the compare always holds.
          await this.writeMany(db, [{ record: next.record, expected: row.record }], now);
          const successors = await insertJobs(db, this.schema, next.successors ?? [], now, {
            origin: this.origin,
            createdAt: this.createdAt,
            updated: next.record,
            log: this.logging,
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
      const stored = (await this.retrying(() => this.storedRecords([jobId]))).get(jobId);
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
      return { written: await this.writeMany(this.pool, rows, now), inDoubt: new Set() };
    } catch (error) {
      if (!isConnectionFailure(error)) throw error;
      this.logger.warn(
        { err: (error as Error).message },
        'postgres connection failed during a write; checking the rows',
      );
    }
    const written = new Set<string>();
    let unsettled = rows;
    for (let attempt = 2; ; attempt++) {
      try {
        const stored = await this.storedRecords(unsettled.map((row) => row.record.jobId));
        for (const { record } of unsettled)
          if (stored.get(record.jobId)?.equals(encodeRecord(record))) written.add(record.jobId);
        unsettled = unsettled.filter((row) => !written.has(row.record.jobId));
        for (const id of await this.writeMany(this.pool, unsettled, now)) written.add(id);
        return { written, inDoubt: new Set(unsettled.map((row) => row.record.jobId).filter((id) => !written.has(id))) };
      } catch (error) {
        if (!isConnectionFailure(error) || attempt >= CONNECTION_TRIES) throw pgFailure(error);
      }
    }
  }

  /**
   * Store new versions of jobs in one statement however many there are. A row with an
   * `expected` record is written only if its stored record is still that one (compare-and-set
   * on the whole record); one without is a row this transaction holds locked. Jobs that are
   * Pending again (retried, reaped, backing off) also notify other servers' waiters, in the
   * same statement. Returns the ids written.
   */
  private async writeMany(
    db: Pick<pg.ClientBase, 'query'>,
    rows: readonly { readonly record: JobRecord; readonly expected: Buffer | null }[],
    now: Micros,
  ): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    const records = rows.map((r) => r.record);
    const pending = records.filter((r) => r.state === JobState.Pending);
    // Identical notifications of one transaction are delivered once, so each Pending row may send it.
    const notify = pending.length > 0 ? `, CASE WHEN u.state = 0 THEN pg_notify($9, $10)::text END AS notified` : '';
    // A row made Pending is held if a pause covers it, under the pause lock; a claim's leases
    // (nothing Pending) do not touch `kind_pauses`, so pauses never wait for claims.
    const held = pending.length > 0 ? `u.state = 0 AND ${pausedSql(this.t, 'j.scope', 'j.kind')}` : 'false';
    // Its lane too; a leased row keeps the lane it was claimed in, for the lane's count.
    const lane =
      pending.length > 0 ? `, lane = CASE WHEN u.state = 0 THEN ${laneSql(this.t, 'j.kind')} ELSE j.lane END` : '';
    const encoded = encodeWrites(records, this.logging);
    const statement = withLog(
      this.t,
      `UPDATE ${this.t}.jobs AS j SET state = u.state,
         not_before = u.not_before, lease_deadline = u.lease_deadline, worker_id = u.worker_id,
         finished_at = u.finished_at, record = u.record, held = ${held}${lane}
       FROM unnest($1::uuid[], $2::bytea[], $3::smallint[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[],
         $8::bytea[]) AS u(job_id, expected, state, not_before, lease_deadline, worker_id, finished_at, record)
       WHERE j.job_id = u.job_id AND (u.expected IS NULL OR j.record = u.expected)${pending.length > 0 ? ` AND ${writeLocks(this.t)}` : ''}
       RETURNING j.job_id, j.scope, j.kind${notify}`,
      [
        BINARY_ARRAYS.uuid(records.map((r) => r.jobId)),
        BINARY_ARRAYS.bytea(rows.map((r) => r.expected)),
        BINARY_ARRAYS.int2(records.map((r) => r.state)),
        BINARY_ARRAYS.int8(records.map((r) => closedGate(r, now))),
        BINARY_ARRAYS.int8(records.map((r) => r.leaseDeadline)),
        BINARY_ARRAYS.text(records.map((r) => r.workerId)),
        BINARY_ARRAYS.int8(records.map((r) => finishedAt(r))),
        BINARY_ARRAYS.bytea(encoded.values),
        ...(pending.length > 0 ? [this.schema.channel, noticePayload(this.origin, workNotices(pending, now))] : []),
      ],
      encoded.entries,
      BINARY_ARRAYS,
    );
    const { rows: written } = await db.query<{ job_id: string }>(named(this.prepare, statement.text, statement.values));
    const ids = new Set(written.map((row) => row.job_id));
    for (const [i, record] of records.entries()) {
      if (ids.has(record.jobId)) this.leases.remember(record, encoded.values[i] as Buffer);
      else this.leases.forget(record.jobId);
    }
    return ids;
  }

  /**
   * One statement on the pool, run again on another connection if its own fails: for reads,
   * and for the pruner's DELETE (a second run deletes only rows still due).
   */
  private query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    return this.retrying(() => this.pool.query<R>(text, values));
  }

  async expiredLeases(now: Micros, limit: number): Promise<string[]> {
    const { rows } = await this.query<{ job_id: string }>(
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
    const { rows } = await this.query<{ job_id: string; record: Buffer }>(
      `SELECT job_id, record FROM ${this.t}.jobs WHERE ${where} ORDER BY scope, priority, created_at, job_id LIMIT $1`,
      args,
    );
    return rows.map((r) => this.decode(r)).filter((r): r is JobRecord => r !== null);
  }

  async prune(params: PruneParams): Promise<number> {
    const { rowCount } = await this.query(
      `DELETE FROM ${this.t}.jobs WHERE job_id IN (
         SELECT job_id FROM ${this.t}.jobs WHERE state = $1 AND finished_at < $2
         ORDER BY finished_at, job_id LIMIT $3 FOR UPDATE SKIP LOCKED)`,
      [params.state, params.finishedBefore, params.limit],
    );
    return rowCount ?? 0;
  }

  async get(jobId: string): Promise<JobRecord | null> {
    const { rows } = await this.query<{ job_id: string; record: Buffer }>(
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
    const { rows } = await this.query<{ job_id: string; record: Buffer }>(
      `SELECT job_id, record FROM ${this.t}.jobs ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY scope, state, priority, created_at, job_id LIMIT $1`,
      args,
    );
    const more = rows.length > query.limit;
    const jobs = rows
      .slice(0, query.limit)
      .map((r) => this.decode(r))
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
    const { rows } = await this.query<{ state: number; kind: string; count: string }>(
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
    const { rows } = await this.query<{ gate: string | null; rated: boolean }>(
      `SELECT (SELECT min(not_before) FROM ${this.t}.jobs WHERE ${where}) AS gate,
         EXISTS (SELECT 1 FROM ${this.t}.kind_limits WHERE rate_count IS NOT NULL) AS rated`,
      args,
    );
    const gate = rows[0]?.gate;
    let earliest = gate === null || gate === undefined ? null : Number(gate);
    if (rows[0]?.rated !== true) return earliest;
    // Sooner: the next token of a rate-limited lane, not full, that holds back ready work in scope.
    // Ready includes a row whose gate is due but not yet opened (claims open due gates lazily).
    const lanes = await this.query<LimitRow & { leased: string }>(
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

  /** Resolves when the database answers; `unavailable` while it cannot be reached. */
  // ---- schedules ----

  async createSchedule(schedule: Schedule, maxPerScope: number): Promise<void> {
    const scope = scopeBytes(schedule.scope);
    const record = encodeSchedule(schedule);
    try {
      await this.retrying(() =>
        this.tx(async (db) => {
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
      const stored = await this.retrying(() => this.storedSchedule(schedule.scope, schedule.name));
      if (stored?.equals(record)) return;
      throw pgFailure(error.cause);
    }
  }

  async updateSchedule(scope: QueueScope, name: string, change: (current: Schedule) => Schedule): Promise<Schedule> {
    const run = (): Promise<Schedule> =>
      this.tx(async (db) => {
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
      return await this.retrying(run);
    } catch (error) {
      if (!(error instanceof InDoubt)) throw error;
      const next = error.result as Schedule;
      const stored = await this.retrying(() => this.storedSchedule(scope, name));
      if (stored?.equals(encodeSchedule(next))) return next;
      throw pgFailure(error.cause);
    }
  }

  async getSchedule(scope: QueueScope, name: string): Promise<Schedule | null> {
    const stored = await this.retrying(() => this.storedSchedule(scope, name));
    return stored === undefined ? null : decodeSchedule(stored, `schedule ${name}`);
  }

  private async storedSchedule(scope: QueueScope, name: string): Promise<Buffer | undefined> {
    const { rows } = await this.pool.query<{ record: Buffer }>(
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
    const { rows } = await this.retrying(() =>
      this.pool.query<{ scope: Buffer; name: string; record: Buffer }>(
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
      this.corruptRows++;
      this.logger.warn({ key: error.key, err: error.message }, 'skipping corrupt schedule row');
      return null;
    }
  }

  // ---- pauses ----

  /**
   * The pause and the `held` mark on every Pending job it covers, in one transaction under the
   * pause lock (`writeLocks`): claims skip held rows through the ready index, which leaves them
   * out, so a pause holds on every server from its commit on and costs claims nothing. The lock
   * also serialises pauses, so two servers cannot both take the last free place.
   */
  async pauseKinds(pause: Pause, bounds: PauseBounds): Promise<Pause> {
    return this.retrying(async () => {
      try {
        return await this.tx(async (db) => {
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
      } catch (error) {
        // Run again, a pause that landed is found and returned: pausing is idempotent.
        if (error instanceof InDoubt) throw error.cause;
        throw error;
      }
    });
  }

  /** Also tells every server's lease waiters to look again: the resumed work is there now. */
  async resumeKinds(scope: PauseScope, kindPrefix: string): Promise<boolean> {
    return this.retrying(async () => {
      try {
        return await this.tx(async (db) => {
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
          await db.query('SELECT pg_notify($1, $2)', [
            this.schema.channel,
            JSON.stringify({ o: this.origin, w: 'all' }),
          ]);
          return true;
        }, this.pauseBegin);
      } catch (error) {
        // Run again, as for a schedule's delete: a resume that landed then finds nothing, and the
        // caller hears `not_found` for a pause that is gone either way (never "resumed" for one
        // that may still hold).
        if (error instanceof InDoubt) throw error.cause;
        throw error;
      }
    });
  }

  // ---- kind limits ----

  /**
   * The limit and the lane of every Pending and Leased job it now covers (`lane`: the longest
   * prefix), in one transaction holding EXCLUSIVE on `kind_limits` (`writeLocks`), so no write or
   * limited claim runs meanwhile. A bucket is kept while the limit keeps a rate. Wakes every
   * server's lease waiters: the new limit may leave more room.
   */
  async setKindLimit(limit: KindLimit, maxTotal: number): Promise<KindLimit> {
    return this.retrying(async () => {
      try {
        return await this.tx(async (db) => {
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
      } catch (error) {
        // Run again, the upsert lands the same limit.
        if (error instanceof InDoubt) throw error.cause;
        throw error;
      }
    });
  }

  /** The limit gone and its jobs moved to the next longest lane covering them, or none. */
  async clearKindLimit(kindPrefix: string): Promise<boolean> {
    return this.retrying(async () => {
      try {
        return await this.tx(async (db) => {
          const { rowCount } = await db.query(`DELETE FROM ${this.t}.kind_limits WHERE kind_prefix = $1`, [kindPrefix]);
          if ((rowCount ?? 0) === 0) return false;
          await db.query(
            `UPDATE ${this.t}.jobs SET lane = ${laneSql(this.t, 'kind')} WHERE state IN (0, 1) AND lane = $1`,
            [kindPrefix],
          );
          await this.notifyAll(db);
          return true;
        }, this.limitBegin);
      } catch (error) {
        // Run again, as for a resume: a clear that landed then finds nothing (`not_found`).
        if (error instanceof InDoubt) throw error.cause;
        throw error;
      }
    });
  }

  async listKindLimits(now: Micros): Promise<KindLimitStatus[]> {
    const { rows } = await this.query<LimitRow & { leased: string }>(
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
    await db.query('SELECT pg_notify($1, $2)', [this.schema.channel, JSON.stringify({ o: this.origin, w: 'all' })]);
  }

  /** Pause and resume hold the pause lock (`writeLocks`) from the start: one writer of pauses at a time. */
  private get pauseBegin(): string {
    return `BEGIN; LOCK TABLE ${this.t}.kind_pauses IN EXCLUSIVE MODE`;
  }

  async listPauses(filter: ScopeFilter): Promise<Pause[]> {
    const pauses = await this.retrying(() => this.readPauses(this.pool));
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
        this.corruptRows++;
        this.logger.warn({ key: error.key, err: error.message }, 'skipping corrupt pause row');
      }
    }
    return pauses;
  }

  async deleteSchedule(scope: QueueScope, name: string): Promise<boolean> {
    // Run again after a lost answer, a delete that landed finds nothing: the caller hears
    // `not_found` for a schedule that is gone either way.
    const { rowCount } = await this.retrying(() =>
      this.pool.query(`DELETE FROM ${this.t}.schedules WHERE scope = $1 AND name = $2`, [scopeBytes(scope), name]),
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
      this.tx(async (db) => {
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
          this.schema,
          firings.map((f) => f.draft),
          now,
          { origin: this.origin, createdAt: this.createdAt, log: this.logging, binaryArrays: true },
        );
        await this.writeSchedules(
          db,
          firings.map((f) => f.next),
        );
        return firings.map((f, i) => ({ schedule: f.next, job: jobs[i] as InsertOutcome }));
      });
    try {
      return await this.retrying(run);
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

  // ---- the transitions log ----

  watchLog(onAppend: () => void): void {
    this.onLog = onAppend;
  }

  /**
   * Readers here follow the log (`following`), or no longer do. The word goes to the other
   * servers, which send log notifications (`announced`) only while some server's readers follow:
   * each NOTIFY costs PostgreSQL a transaction and its notification queue lock, which took a
   * drain at c=100 from 6,230 to 5,385 jobs/s when nobody read them (bench/RESULTS.md).
   */
  logFollowed(following: boolean): void {
    if (following === this.followedHere) return;
    this.followedHere = following;
    if (this.followersTimer !== null) clearInterval(this.followersTimer);
    this.followersTimer = null;
    if (!following || this.closing) return;
    this.noticeFollowers();
    this.followersTimer = setInterval(() => this.noticeFollowers(), FOLLOWERS_NOTICE_TTL_MS / 3);
    this.followersTimer.unref();
  }

  /** Say that readers here follow the log. */
  private noticeFollowers(): void {
    this.pool
      .query('SELECT pg_notify($1, $2)', [this.schema.channel, followersPayload(this.origin, false)])
      .catch((error: unknown) => this.logger.debug({ err: (error as Error).message }, 'followers notification failed'));
  }

  /**
   * Tell the other servers that `records` (committed) appended to the log, so their watchers look
   * again, while some server's readers follow it (`logFollowed`); returns `records`. One
   * notification at a time, and the next no sooner than
   * `LOG_NOTICE_GAP_MS` after it: writes committed meanwhile share it. Each NOTIFY is a
   * transaction that takes PostgreSQL's notification queue lock at commit; one per round trip
   * cost the drain about 5-8% (bench/RESULTS.md). Enqueues need none: their statement's work
   * notification wakes the watchers too.
   */
  private announced<T extends readonly JobRecord[]>(records: T): T {
    if (!this.logging || performance.now() >= this.followedElsewhereUntil || !records.some(logsTransition)) {
      return records;
    }
    if (this.announcing) {
      this.announceAgain = true;
      return records;
    }
    this.announcing = true;
    this.logNotices++;
    this.pool
      .query('SELECT pg_notify($1, $2)', [this.schema.channel, logNoticePayload(this.origin)])
      .catch((error: unknown) => this.logger.debug({ err: (error as Error).message }, 'log notification failed'))
      .finally(() => {
        const next = setTimeout(() => {
          this.announcing = false;
          if (!this.announceAgain || this.closing) return;
          this.announceAgain = false;
          this.announced(records);
        }, LOG_NOTICE_GAP_MS);
        next.unref();
      });
    return records;
  }

  private position(xid: bigint | string, seq: bigint | string): string {
    return formatPosition(LOG_FORMAT, this.logId, [xid, seq]);
  }

  /** `(xmin, 0)`: every transaction that may still append has an xid at or above the oldest running one. */
  async logHead(): Promise<string> {
    const { rows } = await this.query<{ xmin: string }>(
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
    const { rows } = await this.query<{
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
      const job = this.decode({ job_id: `log ${row.xid}.${row.seq}`, record: row.entry });
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
    const { rows } = await this.query<{ xid: string; seq: string; at: string; last: string }>(
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
    await this.retrying(() =>
      this.tx(async (db) => {
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
    ).catch((error: unknown) => {
      // Landed or not, the next pass settles it.
      if (!(error instanceof InDoubt)) throw error;
    });
    return count;
  }

  async health(): Promise<void> {
    await this.query('SELECT 1', []);
  }

  stats(): StoreStats {
    return { corruptRows: this.corruptRows };
  }

  /** One round trip: the table's size with indexes and TOAST, and the oldest Pending job (a scan of the Pending rows). */
  async metrics(): Promise<StoreMetrics> {
    const { rows } = await this.pool.query<{ size: string; oldest: string | null }>(
      `SELECT pg_total_relation_size('${this.t}.jobs') AS size,
              (SELECT min(created_at) FROM ${this.t}.jobs WHERE state = 0) AS oldest`,
    );
    const row = rows[0];
    return { sizeBytes: Number(row?.size ?? 0), oldestPendingAt: row?.oldest == null ? null : Number(row.oldest) };
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.saveTimer);
    if (this.followersTimer !== null) clearInterval(this.followersTimer);
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    const listener = this.listener;
    this.listener = null;
    await this.saveCreatedAt().catch((error: unknown) =>
      this.logger.warn({ err: (error as Error).message }, 'could not save the created_at high-water mark'),
    );
    await Promise.all([listener?.end().catch(() => undefined), this.pool.end()]);
  }
}

function compareXidSeq(a: readonly [bigint, bigint], b: readonly [bigint, bigint]): number {
  return a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] === b[1] ? 0 : a[1] < b[1] ? -1 : 1;
}

/** A write's connection failed and the job changed before the store could tell whether the write landed. */
function writeInDoubt(jobId: string): TelhaError {
  return new TelhaError(
    ErrorCode.Unavailable,
    `job ${jobId}: the database connection failed during its write and the job has changed since, so whether the write landed is unknown; read the job before trying again`,
  );
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

/** Names given to statement texts, for `named`; bounded, since every text is made by the code here. */
const statementNames = new Map<string, string>();
const MAX_STATEMENT_NAMES = 1_000;

/**
 * `text` as a named (prepared) statement when `prepare` is on. PostgreSQL parses and plans an
 * unnamed statement with parameters on every run, which for the fair claim's recursive query took
 * 2-3 ms of its CPU each time; a named one is parsed once per connection, and after five runs its
 * plan is kept when the generic plan costs no more than the custom ones did. The name is a hash
 * of the text: node-postgres prepares each name once per connection and refuses a name reused
 * for another text.
 */
function named(prepare: boolean, text: string, values: unknown[]): pg.QueryConfig {
  return prepare ? { name: statementName(text), text, values } : { text, values };
}

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    if (statementNames.size >= MAX_STATEMENT_NAMES) statementNames.clear();
    name = `telha_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
    statementNames.set(text, name);
  }
  return name;
}

/**
 * A claim statement's parameter written as an SQL literal, for an EXECUTE in a simple-protocol
 * query (which takes no parameters): integers as digits, text through node-postgres's
 * `escapeLiteral`, bytes through `decode(hex)` (right whatever `standard_conforming_strings` is),
 * lists as ARRAY (an empty one as '{}', typed by the prepared statement). Anything else throws.
 */
function sqlLiteral(value: unknown): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (typeof value === 'string') return pg.escapeLiteral(value);
  if (Buffer.isBuffer(value)) return `decode('${value.toString('hex')}', 'hex')`;
  if (Array.isArray(value)) return value.length === 0 ? `'{}'` : `ARRAY[${value.map(sqlLiteral).join(', ')}]`;
  throw new Error(`no SQL literal for ${typeof value}`);
}

/**
 * Create jobs on a connection that is inside a transaction, the store's own
 * or an application's (transactional enqueue): the jobs exist only if that
 * transaction commits, and so does the notification that wakes the servers'
 * lease waiters. `origin` marks the notification as a store's own (its queue
 * announces its writes itself); `updated` is a job changed in the same
 * transaction, which a draft naming its idempotency key must see as changed.
 */
export async function insertJobs(
  db: Pick<pg.ClientBase, 'query'>,
  schema: PgSchema,
  drafts: readonly JobDraft[],
  now: Micros,
  context: {
    readonly origin?: string;
    readonly updated?: JobRecord;
    readonly createdAt: CreatedAtSequence;
    /** Append the jobs' `enqueued` entries to the transitions log. Default `true`. */
    readonly log?: boolean;
    /** Run the INSERT as a named statement (`named`): the store's own connections only, never an application's. */
    readonly prepare?: boolean;
    /**
     * Send its arrays in binary (`BINARY_ARRAYS`): the store's own connections only; an
     * application's client may be one that cannot. Default `false`.
     */
    readonly binaryArrays?: boolean;
  },
): Promise<InsertOutcome[]> {
  if (drafts.length === 0) return [];
  const table = schema.table;
  const updated = context.updated;
  const arrays = context.binaryArrays === true ? BINARY_ARRAYS : TEXT_ARRAYS;
  // A draft repeating an earlier draft's key in this batch shares that draft's outcome.
  const firstBySlot = new Map<string, number>();
  const sameAs: (number | null)[] = [];
  const records: JobRecord[] = [];
  for (const [i, draft] of drafts.entries()) {
    const slot = draft.idempotencyKey === null ? null : idempotencySlot(draft.tenant, draft.idempotencyKey);
    const earlier = slot === null ? undefined : firstBySlot.get(slot);
    if (earlier !== undefined) {
      sameAs.push(earlier);
      continue;
    }
    if (slot !== null) firstBySlot.set(slot, i);
    sameAs.push(null);
    records.push(enqueue(withCreatedAt(draft, context.createdAt.next(now)), now));
  }
  // The notification rides on the same statement (PostgreSQL delivers one per transaction for
  // identical payloads) and only when it commits; it names the drafts, so an idempotent repeat
  // costs a waiter one look. Any unique conflict skips the row: an idempotency key held, or
  // the job id itself, which exists only when this insert runs again after its answer was lost.
  // The log rows ride on it too, for the rows it inserted (`withLog`).
  const encoded = encodeWrites(records, context.log !== false);
  const statement = withLog(
    table,
    `INSERT INTO ${table}.jobs (job_id, scope, tenant, state, priority, created_at, kind, not_before,
       lease_deadline, worker_id, idempotency_key, finished_at, record, held, lane)
     SELECT u.*, ${pausedSql(table, 'u.scope', 'u.kind')}, ${laneSql(table, 'u.kind')}
     FROM unnest(${unseenArray('$1::uuid[]')}, $2::bytea[], $3::text[], $4::smallint[], $5::smallint[], $6::bigint[],
       $7::text[], $8::bigint[], $9::bigint[], $10::text[], $11::text[], $12::bigint[], $13::bytea[])
       AS u(job_id, scope, tenant, state, priority, created_at, kind, not_before, lease_deadline, worker_id,
         idempotency_key, finished_at, record)
     WHERE ${writeLocks(table)}
     ON CONFLICT DO NOTHING
     RETURNING job_id, scope, kind, pg_notify($14, $15) AS notified`,
    [
      ...columns(records, encoded.values, now, arrays),
      schema.channel,
      noticePayload(context.origin ?? '', workNotices(drafts, now)),
    ],
    encoded.entries,
    arrays,
  );
  const inserted = await db.query<{ job_id: string }>(
    named(context.prepare ?? false, statement.text, statement.values),
  );
  const created = new Set(inserted.rows.map((r) => r.job_id));
  // Rows not inserted: keys another job already holds (possibly committed by another server a
  // moment ago), or jobs an earlier try of this same insert created. Job ids are fresh UUIDs,
  // so a row with a draft's own id is that draft's job: created by this call, not a holder.
  const refused = records.filter((r) => !created.has(r.jobId));
  const refusedIds = new Set(refused.map((r) => r.jobId));
  const holders = new Map<string, JobRecord>();
  const createdBefore = new Map<string, JobRecord>();
  if (refused.length > 0) {
    const existing = await db.query<{
      job_id: string;
      tenant: string | null;
      idempotency_key: string | null;
      record: Buffer;
    }>(
      `SELECT j.job_id, j.tenant, j.idempotency_key, j.record FROM ${table}.jobs j
       JOIN unnest($1::bytea[], $2::text[]) AS k(scope, idempotency_key)
         ON j.scope = k.scope AND j.idempotency_key = k.idempotency_key
       UNION ALL
       SELECT job_id, tenant, idempotency_key, record FROM ${table}.jobs WHERE job_id = ANY($3::uuid[])`,
      [refused.map((r) => scopeOfTenant(r.tenant)), refused.map((r) => r.idempotencyKey), [...refusedIds]],
    );
    for (const row of existing.rows) {
      const record = row.job_id === updated?.jobId ? updated : decodeRecord(row.record, `job ${row.job_id}`);
      if (refusedIds.has(row.job_id)) createdBefore.set(row.job_id, record);
      else if (row.idempotency_key !== null) holders.set(idempotencySlot(row.tenant, row.idempotency_key), record);
    }
  }
  const outcomes: InsertOutcome[] = [];
  let r = 0;
  for (const earlier of sameAs) {
    if (earlier !== null) {
      const first = outcomes[earlier];
      if (first === undefined) throw new Error('a repeated idempotency key precedes its first use');
      outcomes.push({ record: first.record, created: false });
      continue;
    }
    const record = records[r++] as JobRecord;
    if (created.has(record.jobId)) {
      outcomes.push({ record, created: true });
      continue;
    }
    const mine = createdBefore.get(record.jobId);
    if (mine !== undefined) {
      outcomes.push({ record: mine, created: true });
      continue;
    }
    const holder = holders.get(idempotencySlot(record.tenant, record.idempotencyKey ?? ''));
    if (holder === undefined)
      throw new Error(`idempotency key ${record.idempotencyKey ?? ''} conflicted but its job is gone`);
    outcomes.push({ record: holder, created: false });
  }
  return outcomes;
}
