/**
 * What the RocksDB store's parts share: the database and its columns, the keyed locks, group
 * commit, the live index, the logger, and the two things that change (`closed`, `corruptRows`).
 * One object, handed to each part; no part refers back to the store.
 */
import { CorruptRecordError, storeClosed } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { LogRecord } from '../../core/transitions-log.ts';
import type { JobRecord } from '../../core/types.ts';
import { decodeEntry, decodeRecord } from '../../codec/value.ts';
import type { Columns } from './columns.ts';
import type { RocksDatabase } from './database.ts';
import type { GroupCommit } from './group-commit.ts';
import type { KeyedLock } from './keyed-lock.ts';
import type { LiveIndex } from './live-index.ts';

/** Bytes as a string of as many characters: the keys of the store's maps and the live index. */
export function latin1(buf: Buffer): string {
  return buf.toString('latin1');
}

/** One store's shared state. */
export class RocksContext {
  /** Set once by `close`: calls from then on answer `store closed`. */
  closed = false;
  /** Rows skipped because they would not decode (`stats`). */
  corruptRows = 0;

  constructor(
    readonly db: RocksDatabase,
    readonly cf: Columns,
    readonly locks: KeyedLock,
    readonly committer: GroupCommit,
    readonly index: LiveIndex,
    readonly logger: Logger,
  ) {}

  assertOpen(): void {
    if (this.closed) throw storeClosed();
  }

  /** A job row decoded, or `null`, counted and logged, when it is corrupt. */
  decodeOrSkip(key: Buffer, value: Buffer): JobRecord | null {
    return this.skipCorrupt(() => decodeRecord(value, key.toString('hex')));
  }

  /** A transitions-log entry decoded, or `null`, counted and logged, when it is corrupt. */
  decodeEntryOrSkip(key: Buffer, value: Buffer): LogRecord | null {
    return this.skipCorrupt(() => decodeEntry(value, key.toString('hex')));
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
