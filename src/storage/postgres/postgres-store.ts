/**
 * The PostgreSQL backend: the same seam, the same core transitions, the same
 * `[version][msgpack]` record, so several servers can share one store.
 *
 * Each seam operation is one transaction. Claims take rows with
 * `FOR UPDATE SKIP LOCKED`, so two servers never lease the same job and never
 * wait on each other; every fenced update reads its row `FOR UPDATE` and applies
 * the core transition inside the transaction, so a stale submission through any
 * server is rejected. Idempotency is a unique index on (scope, key).
 *
 * The record (bytea) is the truth; the other columns are copies of its fields
 * that the indexes need.
 */
import pg from 'pg';
import { CorruptRecordError, notFound } from '../../core/errors.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import { enqueue } from '../../core/transitions.ts';
import { finishedAt, type JobRecord, type JobState, type Micros, type ScopeFilter } from '../../core/types.ts';
import { decodeJobKey, jobKeyOf, scopeBytes, scopeOfTenant } from '../../codec/keys.ts';
import { decodeRecord, encodeRecord } from '../../codec/value.ts';
import { idempotencySlot } from '../shared.ts';
import type {
  Change,
  ClaimParams,
  CountRow,
  InsertOutcome,
  JobDraft,
  JobStore,
  ListPage,
  ListQuery,
  PruneParams,
  StoreStats,
  UpdateOutcome,
} from '../types.ts';
import { migrate, schemaTable } from './migrations.ts';

export { schemaTable };

export interface PostgresStoreOptions {
  /** e.g. `postgres://postgres@127.0.0.1:5432/test` */
  readonly url: string;
  /** Schema holding Telha's tables (created if missing). Default `telha`. */
  readonly schema?: string;
  readonly logger?: Logger;
  /** Connections in the pool. Default 10. */
  readonly poolSize?: number;
}

type Db = pg.PoolClient;

export class PostgresJobStore implements JobStore {
  readonly backend = 'postgres';
  private corruptRows = 0;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly t: string,
    private readonly logger: Logger,
  ) {}

  static async open(options: PostgresStoreOptions): Promise<PostgresJobStore> {
    const schema = options.schema ?? 'telha';
    const table = schemaTable(schema);
    const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 10 });
    try {
      await migrate(pool, schema);
    } catch (error) {
      await pool.end();
      throw error;
    }
    return new PostgresJobStore(pool, table, options.logger ?? silentLogger);
  }

  /** Run `work` in one transaction; any throw rolls it back. */
  private async tx<T>(work: (db: Db) => Promise<T>): Promise<T> {
    const db = await this.pool.connect();
    try {
      await db.query('BEGIN');
      const result = await work(db);
      await db.query('COMMIT');
      return result;
    } catch (error) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      db.release();
    }
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

  private async write(db: Db, record: JobRecord): Promise<void> {
    await db.query(
      `UPDATE ${this.t}.jobs SET state = $2, not_before = $3, lease_deadline = $4, worker_id = $5,
         finished_at = $6, record = $7
       WHERE job_id = $1`,
      [
        record.jobId,
        record.state,
        record.notBefore,
        record.leaseDeadline,
        record.workerId,
        finishedAt(record),
        encodeRecord(record),
      ],
    );
  }

  async insert(drafts: readonly JobDraft[], now: Micros): Promise<InsertOutcome[]> {
    return this.tx((db) => insertJobs(db, this.t, drafts, now));
  }

  async claim(params: ClaimParams): Promise<JobRecord[]> {
    return this.tx(async (db) => {
      const args: unknown[] = [params.now, params.limit];
      let where = `state = 0 AND (not_before IS NULL OR not_before <= $1)`;
      if (params.scope.type !== 'any') {
        args.push(scopeBytes(params.scope));
        where += ` AND scope = $${args.length}`;
      }
      if (params.kinds !== null) {
        args.push(params.kinds);
        where += ` AND EXISTS (SELECT 1 FROM unnest($${args.length}::text[]) AS p WHERE starts_with(kind, p))`;
      }
      const { rows } = await db.query<{ job_id: string; record: Buffer }>(
        `SELECT job_id, record FROM ${this.t}.jobs WHERE ${where}
         ORDER BY scope, priority, created_at, job_id LIMIT $2 FOR UPDATE SKIP LOCKED`,
        args,
      );
      const leased: JobRecord[] = [];
      for (const row of rows) {
        const record = this.decode(row);
        if (record === null) continue;
        const next = params.lease(record);
        await this.write(db, next);
        leased.push(next);
      }
      return leased;
    });
  }

  async update(jobId: string, change: (current: JobRecord) => Change, now: Micros): Promise<UpdateOutcome> {
    return this.tx(async (db) => {
      const { rows } = await db.query<{ job_id: string; record: Buffer }>(
        `SELECT job_id, record FROM ${this.t}.jobs WHERE job_id = $1 FOR UPDATE`,
        [jobId],
      );
      const row = rows[0];
      if (row === undefined) throw notFound(`job ${jobId}`);
      const current = decodeRecord(row.record, `job ${jobId}`);
      const next = change(current);
      await this.write(db, next.record);
      const successors = await insertJobs(db, this.t, next.successors ?? [], now, next.record);
      return { record: next.record, successors };
    });
  }

  async expiredLeases(now: Micros, limit: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ job_id: string }>(
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
    const { rows } = await this.pool.query<{ job_id: string; record: Buffer }>(
      `SELECT job_id, record FROM ${this.t}.jobs WHERE ${where} ORDER BY scope, priority, created_at, job_id LIMIT $1`,
      args,
    );
    return rows.map((r) => this.decode(r)).filter((r): r is JobRecord => r !== null);
  }

  async prune(params: PruneParams): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM ${this.t}.jobs WHERE job_id IN (
         SELECT job_id FROM ${this.t}.jobs WHERE state = $1 AND finished_at < $2
         ORDER BY finished_at, job_id LIMIT $3 FOR UPDATE SKIP LOCKED)`,
      [params.state, params.finishedBefore, params.limit],
    );
    return rowCount ?? 0;
  }

  async get(jobId: string): Promise<JobRecord | null> {
    const { rows } = await this.pool.query<{ job_id: string; record: Buffer }>(
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
    if (query.after !== null) {
      const after = decodeJobKey(Buffer.from(query.after, 'hex'));
      args.push(after.scope, after.state, after.priority, after.createdAt, after.jobId);
      const n = args.length;
      where.push(`(scope, state, priority, created_at, job_id) > ($${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}, $${n})`);
    }
    const { rows } = await this.pool.query<{ job_id: string; record: Buffer }>(
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
    return { jobs, next: more && last !== undefined ? jobKeyOf(last).toString('hex') : null };
  }

  async counts(scope: ScopeFilter): Promise<CountRow[]> {
    const args: unknown[] = [];
    let where = '';
    if (scope.type !== 'any') {
      args.push(scopeBytes(scope));
      where = 'WHERE scope = $1';
    }
    const { rows } = await this.pool.query<{ state: number; kind: string; count: string }>(
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
    const { rows } = await this.pool.query<{ gate: string | null }>(
      `SELECT min(not_before) AS gate FROM ${this.t}.jobs WHERE ${where}`,
      args,
    );
    const gate = rows[0]?.gate;
    return gate === null || gate === undefined ? null : Number(gate);
  }

  stats(): StoreStats {
    return { corruptRows: this.corruptRows };
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** A job row's column values, in the order of the INSERT below. */
function columns(record: JobRecord): unknown[] {
  return [
    record.jobId,
    scopeOfTenant(record.tenant),
    record.tenant,
    record.state,
    record.priority,
    record.createdAt,
    record.kind,
    record.notBefore,
    record.leaseDeadline,
    record.workerId,
    record.idempotencyKey,
    finishedAt(record),
    encodeRecord(record),
  ];
}

/**
 * Create jobs on a connection that is inside a transaction, the store's own
 * or an application's (transactional enqueue): the jobs exist only if that
 * transaction commits. `updated` is a job changed in the same transaction,
 * which a draft naming its idempotency key must see as changed.
 */
export async function insertJobs(
  db: pg.ClientBase,
  table: string,
  drafts: readonly JobDraft[],
  now: Micros,
  updated?: JobRecord,
): Promise<InsertOutcome[]> {
  if (drafts.length === 0) return [];
  // created_at is strictly increasing per store: reserve a block under the meta row's lock.
  const { rows } = await db.query<{ last: string }>(
    `UPDATE ${table}.meta SET last_created_at = GREATEST(last_created_at + $1, $2::bigint + $1 - 1)
     WHERE id = 1 RETURNING last_created_at AS last`,
    [drafts.length, now],
  );
  let next = Number(rows[0]?.last ?? 0) - drafts.length + 1;
  const staged = new Map<string, JobRecord>();
  const outcomes: InsertOutcome[] = [];
  for (const draft of drafts) {
    const slot = draft.idempotencyKey === null ? null : idempotencySlot(draft.tenant, draft.idempotencyKey);
    const earlier = slot === null ? undefined : staged.get(slot);
    if (earlier !== undefined) {
      outcomes.push({ record: earlier, created: false });
      continue;
    }
    const record = enqueue({ ...draft, createdAt: next++ }, now);
    const inserted = await db.query(
      `INSERT INTO ${table}.jobs (job_id, scope, tenant, state, priority, created_at, kind, not_before,
         lease_deadline, worker_id, idempotency_key, finished_at, record)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
       ON CONFLICT (scope, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`,
      columns(record),
    );
    if (inserted.rowCount === 1) {
      if (slot !== null) staged.set(slot, record);
      outcomes.push({ record, created: true });
      continue;
    }
    // Another job holds the key (possibly committed by another server a moment ago).
    const existing = await db.query<{ job_id: string; record: Buffer }>(
      `SELECT job_id, record FROM ${table}.jobs WHERE scope = $1 AND idempotency_key = $2`,
      [scopeOfTenant(draft.tenant), draft.idempotencyKey],
    );
    const row = existing.rows[0];
    if (row === undefined)
      throw new Error(`idempotency key ${draft.idempotencyKey ?? ''} conflicted but its job is gone`);
    const found = row.job_id === updated?.jobId ? updated : decodeRecord(row.record, `job ${row.job_id}`);
    outcomes.push({ record: found, created: false });
  }
  return outcomes;
}
