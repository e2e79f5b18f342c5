/**
 * A typed, minimal face over `@nxtedition/rocksdb` (which ships no types):
 * column families, atomic write batches with an optional WAL sync, point
 * reads and bounded range scans. Nothing queue-specific lives here.
 */
import { createRequire } from 'node:module';
import { statfs } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { DiskFullError, ErrorCode, TelhaError } from '../../core/errors.ts';
import { WriteThread } from './write-thread.ts';

const require = createRequire(import.meta.url);

/** An opaque column-family handle from the binding. */
export type ColumnHandle = object & { readonly __column: unique symbol };

/**
 * The binding's own batch methods (what its `_batch()` uses), below
 * abstract-level's public wrappers: those validate, encode and copy every op
 * for a 'batch' event we never listen to, which more than doubled a transition's
 * write (bench/RESULTS.md, "The measurements behind the code's choices").
 */
interface RawBatch {
  _put(key: Buffer, value: Buffer, options: { column: ColumnHandle }): void;
  _del(key: Buffer, options: { column: ColumnHandle }): void;
  _writeSync(options: { sync: boolean }): void;
  _closeSync(): void;
}

interface RawIterator {
  nextv(size: number): Promise<[Buffer, Buffer][]>;
  close(): Promise<void>;
}

interface RawDb {
  open(options: { columns: Record<string, object>; createIfMissing: boolean; walCompression: boolean }): Promise<void>;
  close(): Promise<void>;
  readonly columns: Record<string, ColumnHandle>;
  _chainedBatch(): RawBatch;
  /** abstract-level's tracking of open resources, which only its own `close()` ends (see `write`). */
  detachResource(resource: RawBatch): void;
  getMany(keys: Buffer[], options: { column: ColumnHandle }): Promise<(Buffer | undefined)[]>;
  _getManySync(keys: Buffer[], options: { column: ColumnHandle }): (Buffer | undefined)[];
  iterator(options: {
    column: ColumnHandle;
    gte?: Buffer;
    gt?: Buffer;
    lt?: Buffer;
    limit?: number;
    keys?: boolean;
    values?: boolean;
    reverse?: boolean;
  }): RawIterator;
  getProperty(name: string): string;
  /** The native store's address, for another thread to open the same store by. */
  readonly handle: bigint;
}

const { RocksLevel } = require('@nxtedition/rocksdb') as {
  RocksLevel: new (location: string, options: { keyEncoding: 'buffer'; valueEncoding: 'buffer' }) => RawDb;
};

/**
 * The smallest batch sent to the write thread. A hop there and back costs latency and some CPU
 * on both threads (bench/RESULTS.md, "The server's threads"); a small batch (one awaited enqueue is ~5 ops) is cheaper to write
 * here, and an awaited call would wait for the hop. A busy server's batches carry tens of
 * transitions, hundreds of ops.
 */
export const WRITE_THREAD_MIN_OPS = 64;

export interface WriteOp {
  readonly column: ColumnHandle;
  readonly key: Buffer;
  /** `null` deletes the key. */
  readonly value: Buffer | null;
}

/**
 * How a column is tuned (every column of a store, `default` included).
 *
 * `memtableBudget` (bytes) bounds what a crash leaves to replay: RocksDB keeps a write-ahead log
 * file until every column with data in it has flushed, and forces those flushes only once the logs
 * pass `max_total_wal_size`, which the binding never sets (it reads the option into the wrong
 * variable), so RocksDB derives it as 4 x the columns' write buffers (size x count) summed. Small
 * budgets keep that sum, and so the log a reopen replays, small.
 *
 * `zstdDictionary`: whether compactions train a ZSTD dictionary for each file they write. The
 * binding compresses every column with ZSTD from the third level down; a dictionary trained on the
 * file's own keys and values shrinks small, similar records far more, for CPU on every compaction.
 */
export interface ColumnTuning {
  readonly memtableBudget: number;
  readonly zstdDictionary: boolean;
}
export type ColumnTunings = Readonly<Record<string, ColumnTuning>>;

export interface ScanRange {
  readonly gte?: Buffer;
  readonly gt?: Buffer;
  readonly lt?: Buffer;
  readonly limit?: number;
  /** Descending key order. */
  readonly reverse?: boolean;
}

/** A column as it stood when pinned (`RocksDatabase.pin`): read its rows once, or close it unread. */
export interface PinnedColumn {
  rows(pageSize?: number): AsyncGenerator<[Buffer, Buffer]>;
  close(): Promise<void>;
}

export class RocksDatabase {
  /** Where batches are written when not on the calling thread (`startWriteThread`). */
  private thread: WriteThread | null = null;
  private threadMinOps = WRITE_THREAD_MIN_OPS;

  private constructor(
    private readonly db: RawDb,
    readonly location: string,
    /** Every column family's name, `default` first. */
    private readonly columnNames: readonly string[],
  ) {}

  /**
   * Open (creating it if missing) with `columnNames` beside the default column, each tuned by
   * `tunings` (see `ColumnTuning`); a column without one keeps the binding's defaults.
   */
  static async open(
    location: string,
    columnNames: readonly string[],
    tunings: ColumnTunings = {},
  ): Promise<RocksDatabase> {
    const db = new RocksLevel(location, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    const tuning = (name: string): object => {
      const column = tunings[name];
      // The binding sizes memtables only under a compaction style: 'level' takes write_buffer_size =
      // budget / 4, up to 6 of them, merged two at a time, and leaves L0 and L1 uncompressed. Its
      // `compression` option adds the dictionary (the levels' ZSTD stays either way).
      return column === undefined
        ? {}
        : { compaction: 'level', memtableMemoryBudget: column.memtableBudget, compression: column.zstdDictionary };
    };
    const columns: Record<string, object> = { default: tuning('default') };
    for (const name of columnNames) columns[name] = tuning(name);
    try {
      // No ZSTD on the write-ahead log (the binding's default compresses it): a group commit's
      // record is written once and read only by a crash's replay, and compressing it cost the
      // writing thread more than the halved bytes saved, even under `fsync` (bench/RESULTS.md,
      // "The write-ahead log without ZSTD").
      await db.open({ columns, createIfMissing: true, walCompression: false });
    } catch (error) {
      throw lockedStore(location, error) ?? (await openOnFullDisk(location, error)) ?? error;
    }
    return new RocksDatabase(db, location, Object.keys(columns));
  }

  column(name: string): ColumnHandle {
    const handle = this.db.columns[name];
    if (handle === undefined) throw new Error(`column family ${name} is not open`);
    return handle;
  }

  /**
   * Apply every op in one atomic RocksDB write batch. With `sync`, the WAL is
   * fsynced before this returns. The binding writes synchronously on the calling
   * thread, so this is synchronous too.
   */
  write(ops: readonly WriteOp[], sync: boolean): void {
    const batch = this.db._chainedBatch();
    try {
      for (const op of ops) {
        if (op.value === null) batch._del(op.key, { column: op.column });
        else batch._put(op.key, op.value, { column: op.column });
      }
      batch._writeSync({ sync });
    } catch (error) {
      throw writeOnFullDisk(this.location, error) ?? error;
    } finally {
      // `_closeSync` frees the native batch but leaves it in abstract-level's set of open
      // resources (only its asynchronous `close()` takes it out), where every write since the
      // store opened would stay: a leak of one batch object per write.
      batch._closeSync();
      this.db.detachResource(batch);
    }
  }

  /**
   * From now on, `writeBatch` writes batches of at least `minOps` ops on a thread of its own (see
   * `WriteThread`); tests pass 0 to send every batch there.
   */
  async startWriteThread(minOps = WRITE_THREAD_MIN_OPS): Promise<void> {
    if (this.thread !== null) return;
    this.threadMinOps = minOps;
    const names = this.columnNames;
    this.thread = await WriteThread.start(
      this.db.handle,
      require.resolve('@nxtedition/rocksdb'),
      names,
      names.map((name) => this.column(name)),
    );
  }

  /**
   * `write`, on the write thread once one is started and the batch is big enough to be worth the
   * hop: the promise resolves once RocksDB has the batch (rejects if it failed). Callers keep one
   * such write in flight at a time, so batches land in the order they were made.
   */
  writeBatch(ops: readonly WriteOp[], sync: boolean): Promise<void> | void {
    if (this.thread === null || ops.length < this.threadMinOps) return this.write(ops, sync);
    return this.thread.write(ops, sync).catch((error: unknown) => {
      throw writeOnFullDisk(this.location, error) ?? error;
    });
  }

  /**
   * Point reads on the calling thread. The async form hops through libuv's
   * thread pool, several times slower with millisecond tails under load, where
   * rows in the memtable or block cache (the live rows a lease reads were
   * written moments ago) come back at once here (bench/RESULTS.md, "The
   * measurements behind the code's choices"). A read that misses the cache blocks the
   * event loop for one disk read.
   */
  getManySync(column: ColumnHandle, keys: Buffer[]): (Buffer | undefined)[] {
    if (keys.length === 0) return [];
    return this.db._getManySync(keys, { column });
  }

  async getMany(column: ColumnHandle, keys: Buffer[]): Promise<(Buffer | undefined)[]> {
    if (keys.length === 0) return [];
    return this.db.getMany(keys, { column });
  }

  async get(column: ColumnHandle, key: Buffer): Promise<Buffer | undefined> {
    const [value] = await this.db.getMany([key], { column });
    return value;
  }

  /** Entries of a key range in ascending order (descending with `reverse`), fetched `pageSize` at a time. */
  async *scan(column: ColumnHandle, range: ScanRange, pageSize = 256): AsyncGenerator<[Buffer, Buffer]> {
    yield* drain(this.db.iterator({ column, ...range }), pageSize);
  }

  /**
   * Readers of whole columns, made in one synchronous step: RocksDB pins what an iterator reads
   * when it is made (an implicit snapshot), so, with no write landing in between (`GroupCommit.
   * between`), they read the columns as they stood at one moment.
   */
  pin(columns: readonly ColumnHandle[]): PinnedColumn[] {
    return columns.map((column) => {
      const iterator = this.db.iterator({ column });
      return {
        rows: (pageSize = 1024) => drain(iterator, pageSize),
        close: () => iterator.close(),
      };
    });
  }

  /** The first key at or after `from` (and before `lt`), or `null`. */
  async firstKey(column: ColumnHandle, from: Buffer, lt?: Buffer): Promise<Buffer | null> {
    const iterator = this.db.iterator({ column, gte: from, limit: 1, values: false, ...(lt ? { lt } : {}) });
    try {
      const [entry] = await iterator.nextv(1);
      return entry ? entry[0] : null;
    } finally {
      await iterator.close();
    }
  }

  /** The last key of a column, or `null` when it is empty. */
  async lastKey(column: ColumnHandle): Promise<Buffer | null> {
    const iterator = this.db.iterator({ column, reverse: true, limit: 1, values: false });
    try {
      const [entry] = await iterator.nextv(1);
      return entry ? entry[0] : null;
    } finally {
      await iterator.close();
    }
  }

  property(name: string): string {
    return this.db.getProperty(name);
  }

  /**
   * Close the store; nothing may be writing (group commit drained). After a failed write the
   * binding may reject ("Database is not closed": RocksDB's close reports the error it saw),
   * yet it has let go of the store: it drops its RocksDB, and with it the `LOCK`, either way.
   */
  async close(): Promise<void> {
    await this.thread?.close();
    this.thread = null;
    await this.db.close();
  }
}

/**
 * RocksDB lets one process at a time open a store, holding `<dir>/LOCK`; the binding reports a
 * second open as "Database is not open", with the lock in its cause (code LEVEL_LOCKED). Say
 * which store and what to do instead. Not transient: the holder will not let go by itself.
 */
function lockedStore(location: string, error: unknown): TelhaError | null {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (cause?.code !== 'LEVEL_LOCKED') return null;
  const dir = resolve(location);
  const [holder, remedy] = String(cause.message).includes('by current process')
    ? ['is already open in this process', 'close the queue that has it open']
    : ['is open in another process', 'stop that process'];
  return new TelhaError(
    ErrorCode.FailedPrecondition,
    `the store at ${dir} ${holder} (RocksDB holds ${join(dir, 'LOCK')}); ${remedy} or point storage.path elsewhere`,
    { cause: error },
  );
}

/**
 * How ENOSPC reads: RocksDB's "IO error: No space left on device: ..." in a write's error (or, when
 * a background flush hit it, every write's after), Node's "ENOSPC: no space left on device, mkdir"
 * when the binding makes the store's directory.
 */
const NO_SPACE = /no space left on device/i;

/** The message saying the disk has no space left, in `error` or an error it wraps; `null` without one. */
function noSpaceMessage(error: unknown): string | null {
  let at = error as { message?: unknown; cause?: unknown } | null | undefined;
  for (let depth = 0; at !== null && at !== undefined && depth < 4; depth++) {
    if (typeof at.message === 'string' && NO_SPACE.test(at.message)) return at.message;
    at = at.cause as typeof at;
  }
  return null;
}

/** A write RocksDB refused for want of space, as the store reports it; `null` for any other failure. */
function writeOnFullDisk(location: string, error: unknown): DiskFullError | null {
  if (noSpaceMessage(error) === null) return null;
  return new DiskFullError(
    resolve(location),
    'writes are refused until space is freed on it, and resume by themselves then',
    error,
  );
}

/**
 * An open RocksDB refused for want of space: replaying the write-ahead log writes its contents to
 * new table files, and a new log is made. The binding reports it as "Database is not open", with
 * the I/O error in its cause; or, when the store's directory could not be made, with Node's
 * recursive `mkdir` error, which on a full disk can read ENOENT: then the disk itself is asked.
 */
async function openOnFullDisk(location: string, error: unknown): Promise<DiskFullError | null> {
  const cause = (error as { cause?: { syscall?: unknown; message?: unknown } } | null)?.cause;
  const message =
    noSpaceMessage(error) ??
    (cause?.syscall === 'mkdir' && (await diskIsFull(resolve(location))) ? String(cause.message) : null);
  if (message === null) return null;
  return new DiskFullError(
    resolve(location),
    `RocksDB cannot open it (${message}); free space on that disk and start again`,
    error,
  );
}

/** Whether the file system holding `path` (or its nearest existing parent) has no block or no inode free. */
async function diskIsFull(path: string): Promise<boolean> {
  for (let at = path; ; at = dirname(at)) {
    try {
      const disk = await statfs(at);
      return disk.bavail === 0 || disk.ffree === 0;
    } catch {
      if (dirname(at) === at) return false;
    }
  }
}

/** An iterator's entries, fetched `pageSize` at a time, closing it when done or abandoned. */
async function* drain(iterator: RawIterator, pageSize: number): AsyncGenerator<[Buffer, Buffer]> {
  try {
    for (;;) {
      const entries = await iterator.nextv(pageSize);
      if (entries.length === 0) return;
      yield* entries;
    }
  } finally {
    await iterator.close();
  }
}
