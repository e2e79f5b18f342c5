/**
 * The transitions log as the store reads it: the head, pages of entries in (xid, seq) order, and
 * pruning past retention. Writes append their entries in their own statements (`withLog` in
 * `sql/writes.ts`); `listener.ts` tells other servers' watchers when to read again.
 */
import {
  formatPosition,
  logEntryExpired,
  logMatches,
  parsePosition,
  positionPruned,
  type LogEntry,
  type LogFilter,
  type LogPage,
  type LogPruneParams,
} from '../../core/transitions-log.ts';
import { scopeBytes } from '../../codec/keys.ts';
import { InDoubt, type StoreContext } from './connection.ts';

/** A PostgreSQL store's log position: `p1.<store id>.<xid>.<seq>`. */
const LOG_FORMAT = 'p1';

/** The store's reads and pruning of the transitions log. */
export class TransitionsLog {
  private readonly t: string;

  constructor(
    private readonly ctx: StoreContext,
    /** Names this store in log positions (`job_transitions_meta.store_id`). */
    private readonly logId: string,
  ) {
    this.t = ctx.t;
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
      const job = this.ctx.decodeLogEntry(`log ${row.xid}.${row.seq}`, row.entry);
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
}

function compareXidSeq(a: readonly [bigint, bigint], b: readonly [bigint, bigint]): number {
  return a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] === b[1] ? 0 : a[1] < b[1] ? -1 : 1;
}
