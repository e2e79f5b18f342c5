/**
 * The transitions log of a RocksDB store: entries numbered as they are staged, in the `transitions`
 * column (written in the batch of their transition), the newest also in memory for live watchers,
 * and the positions readers resume from. Group commit tells it when a batch is made and when it
 * landed; only then may readers see its entries.
 */
import { invalidArgument } from '../../core/errors.ts';
import {
  formatPosition,
  logEntryExpired,
  logMatches,
  parsePosition,
  positionPruned,
  transitionOf,
  type LogEntry,
  type LogFilter,
  type LogPage,
  type LogPruneParams,
  type LogRecord,
} from '../../core/transitions-log.ts';
import { encodeU64, readU64 } from '../../codec/keys.ts';
import type { EncodedEntry } from '../../codec/value.ts';
import { META_LOG_PRUNED } from './columns.ts';
import type { RocksContext } from './context.ts';
import type { WriteOp } from './database.ts';
import { RecentLog } from './recent-log.ts';

/** Log entries held in memory for live watchers: a few batches of a watch behind the head. */
const RECENT_LOG_ENTRIES = 8_192;
/** A RocksDB store's log position: `r1.<store id>.<seq>`. */
const LOG_FORMAT = 'r1';

/** Where the transitions log stands at open. */
export interface LogState {
  readonly id: string;
  readonly last: number;
  readonly pruned: number;
  readonly enabled: boolean;
}

/** The store's transitions log: what is staged, written and pruned, and the reads of it. */
export class TransitionsLog {
  /** The last log seq staged; entries are numbered as staged, and group commit writes them in that order. */
  private logStaged: number;
  /** The last log seq written to RocksDB: what readers may see. */
  private logWritten: number;
  /** The last log seq in the batch being written. */
  private logFlushing: number;
  private logPruned: number;
  /** Log entries staged since the last write, by seq, for `recentLog` once they are written. */
  private readonly stagedLog = new Map<number, LogRecord>();
  /** The newest entries written, which live watchers read instead of the store. */
  private readonly recentLog = new RecentLog(RECENT_LOG_ENTRIES);

  constructor(
    private readonly ctx: RocksContext,
    private readonly logState: LogState,
  ) {
    this.logStaged = logState.last;
    this.logWritten = logState.last;
    this.logFlushing = logState.last;
    this.logPruned = logState.pruned;
  }

  /** Whether writes append entries (`transitionsLog`). */
  get enabled(): boolean {
    return this.logState.enabled;
  }

  /** Append a log entry to the ops of its job's write. */
  stage(ops: WriteOp[], entry: EncodedEntry): void {
    const seq = ++this.logStaged;
    ops.push({ column: this.ctx.cf.log, key: encodeU64(seq), value: entry.value });
    this.stagedLog.set(seq, entry.record);
  }

  /**
   * After a write landed: readers may now see its entries, which join the recent ones. A seq staged
   * before the batch was made but not in it was never written (its write failed before staging);
   * one staged after belongs to the next batch.
   */
  landed(ops: readonly WriteOp[]): void {
    const flushed = this.logFlushing;
    if (this.stagedLog.size > 0) {
      for (const op of ops) {
        if (op.column !== this.ctx.cf.log || op.value === null) continue;
        const seq = readU64(op.key, 0);
        const job = this.stagedLog.get(seq);
        if (job !== undefined) this.recentLog.add(seq, job);
      }
      for (const seq of this.stagedLog.keys()) if (seq <= flushed) this.stagedLog.delete(seq);
    }
    this.logWritten = flushed;
  }

  /**
   * A batch is being made: every entry staged so far is in it, and readers see them once it lands
   * (on the write thread, later than this).
   */
  batchMade(): void {
    this.logFlushing = this.logStaged;
  }

  private position(seq: number): string {
    return formatPosition(LOG_FORMAT, this.logState.id, [seq]);
  }

  logHead(): Promise<string> {
    this.ctx.assertOpen();
    return Promise.resolve(this.position(this.logWritten));
  }

  async readLog(after: string, limit: number, filter: LogFilter): Promise<LogPage> {
    this.ctx.assertOpen();
    const [parsed] = parsePosition(after, LOG_FORMAT, this.logState.id, 1);
    const seen = Number(parsed);
    const written = this.logWritten;
    if (seen > written) throw invalidArgument('resume_token', 'a position this store has not reached');
    const entries: LogEntry[] = [];
    let position = seen;
    if (!this.ctx.committer.failed && this.recentLog.covers(seen + 1)) {
      position = Math.min(written, seen + limit);
      for (let seq = seen + 1; seq <= position; seq++) {
        const job = this.recentLog.at(seq);
        if (job !== undefined && logMatches(job, filter)) entries.push({ position: this.position(seq), seq, job });
      }
      if (seen < this.logPruned) throw positionPruned();
      return { entries, position: this.position(position) };
    }
    const range = { gt: encodeU64(seen), lt: encodeU64(written + 1), limit };
    for await (const [key, value] of this.ctx.db.scan(this.ctx.cf.log, range, Math.min(limit, 256))) {
      position = readU64(key, 0);
      const job = this.ctx.decodeEntryOrSkip(key, value);
      if (job !== null && logMatches(job, filter))
        entries.push({ position: this.position(position), seq: position, job });
    }
    // Checked after the read: pruning only moves forward, so entries read before it passed `seen` were all there.
    if (seen < this.logPruned) throw positionPruned();
    return { entries, position: this.position(position) };
  }

  async pruneLog(params: LogPruneParams): Promise<number> {
    this.ctx.assertOpen();
    const ops: WriteOp[] = [];
    let last = this.logPruned;
    for await (const [key, value] of this.ctx.db.scan(this.ctx.cf.log, { gt: encodeU64(last), limit: params.limit })) {
      const seq = readU64(key, 0);
      const job = this.ctx.decodeEntryOrSkip(key, value);
      if (job !== null && !logEntryExpired(transitionOf(job).at, this.logWritten - seq, params)) break;
      ops.push({ column: this.ctx.cf.log, key, value: null });
      last = seq;
    }
    if (ops.length === 0) return 0;
    ops.push({ column: this.ctx.cf.meta, key: META_LOG_PRUNED, value: encodeU64(last) });
    await this.ctx.committer.stage(ops);
    this.logPruned = last;
    return ops.length - 1;
  }
}
