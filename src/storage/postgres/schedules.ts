/**
 * Schedules: created one per scope at a time (an advisory lock keeps the count true across
 * servers), changed under a row lock, and fired in passes of one transaction each, whose due rows
 * are locked with SKIP LOCKED so each is fired by one server, and whose jobs are inserted by the
 * INSERT every enqueue uses.
 */
import { CorruptRecordError, notFound } from '../../core/errors.ts';
import { scheduleExists, tooManySchedules, type Schedule, type ScheduleFiring } from '../../core/schedules.ts';
import type { Micros, QueueScope } from '../../core/types.ts';
import { scopeBytes } from '../../codec/keys.ts';
import { decodeSchedule, encodeSchedule, schedulePageKey, schedulePageToken } from '../../codec/schedules.ts';
import type { FiredSchedule, InsertOutcome, SchedulePage, ScheduleQuery } from '../types.ts';
import { InDoubt, type Db, type StoreContext } from './connection.ts';
import { pgFailure } from './failures.ts';
import { insertJobs } from './insert.ts';

/** The store's schedules. */
export class Schedules {
  private readonly t: string;

  constructor(private readonly ctx: StoreContext) {
    this.t = ctx.t;
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
}
