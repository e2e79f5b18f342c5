/**
 * Pauses and kind limits. A pause marks the Pending jobs it covers `held`, which the ready index
 * leaves out, so a pause holds on every server from its commit on and costs claims nothing; a
 * limit gives the jobs it covers a `lane`, whose room limited claims respect. Both are kept exact
 * by table locks that every write making Pending work shares (`writeLocks` in `sql/controls.ts`).
 */
import type pg from 'pg';
import { CorruptRecordError } from '../../core/errors.ts';
import {
  admitKindLimit,
  compareKindLimits,
  limitStatus,
  type KindLimit,
  type KindLimitStatus,
} from '../../core/kind-limits.ts';
import { SYSTEM_KIND_PREFIX } from '../../core/bounds.ts';
import {
  admitPause,
  comparePauses,
  pauseInFilter,
  type Pause,
  type PauseBounds,
  type PauseScope,
} from '../../core/pauses.ts';
import type { Micros, ScopeFilter } from '../../core/types.ts';
import { decodePause, encodePause, pauseScopeBytes } from '../../codec/pauses.ts';
import type { Db, StoreContext } from './connection.ts';
import { allWorkPayload } from './notices.ts';
import {
  bucketOfRow,
  laneSql,
  LIMIT_COLUMNS,
  limitOfRow,
  pauseCovers,
  pausedSql,
  type LimitRow,
} from './sql/controls.ts';

/** The store's pauses and kind limits. */
export class Controls {
  private readonly t: string;

  constructor(private readonly ctx: StoreContext) {
    this.t = ctx.t;
  }

  // ---- pauses ----

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
}
