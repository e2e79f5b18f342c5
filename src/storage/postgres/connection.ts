/**
 * What every part of the PostgreSQL store shares: the pool and the store's context (its tables,
 * its origin on the channel, the leases it remembers, whether it is closing), and the one way a
 * part runs statements on them: in a transaction (`tx`), again on another connection when its
 * own failed (`retrying`), and by name when prepared statements are on (`named`).
 *
 * Connections fail: PostgreSQL restarts, fails over, or ends sessions (`pg_terminate_backend`,
 * `idle_session_timeout`). No failure may end the process, so the pool and every pooled
 * connection listen for errors. A call whose connection failed runs again on another where that
 * cannot apply a change twice; when the database stays away, or a write's fate cannot be known,
 * it answers `unavailable` (`pgFailure`), which callers retry after a pause.
 */
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { CorruptRecordError, ErrorCode, storeClosed, TelhaError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { LogRecord } from '../../core/transitions-log.ts';
import type { JobRecord, Micros } from '../../core/types.ts';
import { decodeEntry, decodeRecord } from '../../codec/value.ts';
import { CreatedAtSequence } from '../shared.ts';
import { isConnectionFailure, pgFailure } from './failures.ts';
import { schemaTable } from './migrations.ts';
import { WrittenLeases } from './written-leases.ts';

export type Db = pg.PoolClient;

/** What the store's connections call themselves in `pg_stat_activity`, unless the URL says otherwise. */
export const PG_APPLICATION_NAME = 'telha';
/**
 * Tries of a call whose connection failed. A restart ends every pooled connection at once and
 * the pool drops each as its error arrives, so a second or third try finds a live (or new) one;
 * when those fail too the database is away, and the caller hears `unavailable` and backs off.
 */
export const CONNECTION_TRIES = 3;

/**
 * The memory for the leases a store remembers (`WrittenLeases`): a few thousand jobs in flight
 * with payloads of a few KiB, and a bound on the memory however large the payloads.
 */
const WRITTEN_LEASES_BYTES = 64 * 1024 * 1024;

/**
 * A COMMIT sent whose answer never came: the transaction may or may not have committed.
 * `result` is what the transaction's work returned, for the caller to look for in the rows.
 */
export class InDoubt<T> extends Error {
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

/**
 * The pool of a store's connections. A connection PostgreSQL ends (restart, failover,
 * pg_terminate_backend) emits 'error', and an 'error' with no listener ends the process. The pool
 * listens only while a connection is idle (then drops it and emits 'error' itself); while one is
 * handed out nobody does, and a promise-based `pool.connect()` leaves a gap even for a caller
 * that listens at once: the rest of the socket chunk that released the connection, often the
 * FATAL that follows a finished statement, is read before the caller's code runs (node-postgres
 * issue 2762). So every connection gets a listener of its own for its whole life; the statement
 * that was running, or the next one, fails and says why.
 */
export function openPool(
  options: { readonly url: string; readonly poolSize?: number; readonly durability?: 'process' | 'fsync' },
  logger: Logger,
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    fallback_application_name: PG_APPLICATION_NAME,
    max: options.poolSize ?? 10,
    ...(options.durability === 'process' ? { options: '-c synchronous_commit=off' } : {}),
  });
  pool.on('connect', (client) =>
    client.on('error', (error) => logger.debug({ err: error.message }, 'postgres connection failed')),
  );
  pool.on('error', (error) =>
    logger.warn({ err: error.message }, 'postgres ended an idle pooled connection; it was dropped'),
  );
  return pool;
}

/**
 * One store's shared state, handed to each of its parts: the pool and the tables, the origin
 * that marks its notifications, the created_at sequence of its jobs, the leases it wrote last,
 * and the two things that change (`closing`, `corruptRows`).
 */
export class StoreContext {
  /** The quoted schema to prefix table names with. */
  readonly t: string;
  /** Marks this store's own notifications, which its queue has announced already. */
  readonly origin = randomUUID();
  /**
   * created_at of this server's jobs: strictly increasing per server, following the clock, so
   * no enqueue waits on a row shared by every server. Jobs of different servers order by their
   * servers' clocks, ties by id. Its high-water mark is saved in the meta row (every second and
   * at close) so a restart with a clock behind it still continues above it.
   */
  readonly createdAt: CreatedAtSequence;
  /** The leases this store wrote last, which a worker's result starts from instead of reading the row. */
  readonly leases = new WrittenLeases(WRITTEN_LEASES_BYTES);
  /** Set once by `close`: calls not yet begun answer `store closed`, timers stop rescheduling. */
  closing = false;
  /** Rows skipped because their record would not decode (`stats`). */
  corruptRows = 0;

  constructor(
    readonly pool: pg.Pool,
    readonly schema: PgSchema,
    readonly logger: Logger,
    /** `storage.prepared_statements` (see `named`). */
    readonly prepare: boolean,
    /** Append to the transitions log (`transitionsLog`). */
    readonly logging: boolean,
    lastCreatedAt: Micros,
  ) {
    this.t = schema.table;
    this.createdAt = new CreatedAtSequence(lastCreatedAt);
  }

  /**
   * Run `work` in one transaction; any throw rolls it back. A connection that fails before
   * COMMIT leaves nothing behind (PostgreSQL rolls back the transaction of a session that
   * ends), so that failure is thrown as it is and the caller may run the work again. A COMMIT
   * whose answer is lost may have committed or not: that throws `InDoubt` with the
   * work's result, for the caller to look for in the rows.
   */
  async tx<T>(
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
  async retrying<T>(work: () => Promise<T>): Promise<T> {
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
   * `tx` for work that may run again whole however its last try ended: a failed connection or a
   * COMMIT whose answer was lost (`InDoubt`) both run it again (`retrying`). Each caller says why
   * a second run cannot apply its change twice.
   */
  txAgain<T>(work: (db: Db, begun: pg.QueryResult[]) => Promise<T>, begin: string | ((db: Db) => string)): Promise<T> {
    return this.retrying(async () => {
      try {
        return await this.tx(work, begin);
      } catch (error) {
        if (error instanceof InDoubt) throw error.cause;
        throw error;
      }
    });
  }

  /**
   * One statement on the pool, run again on another connection if its own fails: for reads,
   * and for the pruner's DELETE (a second run deletes only rows still due).
   */
  query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    return this.retrying(() => this.pool.query<R>(text, values));
  }

  /**
   * The stored record of each of `ids` that exists. After a write whose answer was lost, a row
   * holding exactly the bytes the write meant to store shows the job is as that write left it:
   * every transition records its time, so other bytes mean the write did not land, or was
   * overtaken since.
   */
  async storedRecords(ids: readonly string[]): Promise<Map<string, Buffer>> {
    if (ids.length === 0) return new Map();
    const { rows } = await this.pool.query<{ job_id: string; record: Buffer }>(
      named(this.prepare, `SELECT job_id, record FROM ${this.t}.jobs WHERE job_id = ANY($1::uuid[])`, [ids]),
    );
    return new Map(rows.map((row) => [row.job_id, row.record]));
  }

  decode(row: { job_id: string; record: Buffer }): JobRecord | null {
    return this.skipCorrupt(() => decodeRecord(row.record, `job ${row.job_id}`));
  }

  /** A transitions-log entry decoded, or `null`, counted and logged, when it is corrupt; `name` says which. */
  decodeLogEntry(name: string, entry: Buffer): LogRecord | null {
    return this.skipCorrupt(() => decodeEntry(entry, name));
  }

  private skipCorrupt<T>(decode: () => T): T | null {
    try {
      return decode();
    } catch (error) {
      if (!(error instanceof CorruptRecordError)) throw error;
      this.corruptRows++;
      this.logger.warn({ key: error.key, err: error.message }, 'skipping corrupt job row');
      return null;
    }
  }
}

/** A write's connection failed and the job changed before the store could tell whether the write landed. */
export function writeInDoubt(jobId: string): TelhaError {
  return new TelhaError(
    ErrorCode.Unavailable,
    `job ${jobId}: the database connection failed during its write and the job has changed since, so whether the write landed is unknown; read the job before trying again`,
  );
}

/** Names given to statement texts, for `named`; bounded, since every text is made by the code here. */
const statementNames = new Map<string, string>();
const MAX_STATEMENT_NAMES = 1_000;

/**
 * `text` as a named (prepared) statement when `prepare` is on. PostgreSQL parses and plans an
 * unnamed statement with parameters on every run, a cost the fair claim's recursive query felt
 * most (bench/RESULTS.md, "On PostgreSQL: prepared statements"); a named one is parsed once per connection, and after five runs its
 * plan is kept when the generic plan costs no more than the custom ones did. The name is a hash
 * of the text: node-postgres prepares each name once per connection and refuses a name reused
 * for another text.
 */
export function named(prepare: boolean, text: string, values: unknown[]): pg.QueryConfig {
  return prepare ? { name: statementName(text), text, values } : { text, values };
}

export function statementName(text: string): string {
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
export function sqlLiteral(value: unknown): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (typeof value === 'string') return pg.escapeLiteral(value);
  if (Buffer.isBuffer(value)) return `decode('${value.toString('hex')}', 'hex')`;
  if (Array.isArray(value)) return value.length === 0 ? `'{}'` : `ARRAY[${value.map(sqlLiteral).join(', ')}]`;
  throw new Error(`no SQL literal for ${typeof value}`);
}
