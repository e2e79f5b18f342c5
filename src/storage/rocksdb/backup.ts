/**
 * Online backup of a RocksDB store, and restoring one.
 *
 * The binding (`@nxtedition/rocksdb` 12) has no checkpoint, no backup engine and no explicit
 * snapshot, but an iterator pins what it reads when it is made. So a backup waits for a moment
 * no batch is being written (`GroupCommit.between`: the batch in flight lands, the next is held),
 * makes one iterator per column in that moment, lets writes go on, and copies what the iterators
 * read into a fresh store. The copy holds every write acknowledged before the backup began (it
 * had landed) and none by halves (a batch is atomic, and none was landing). Writes wait at most
 * for the batch in flight and the making of seven iterators (bench/RESULTS.md, "Backups").
 *
 * A backup is a store directory with a marker file, written last: the copy goes to
 * `<target>.partial`, then the marker, then a rename to `<target>`. A backup cut short (SIGKILL)
 * leaves only `<target>.partial`, which has no marker, and restore refuses a directory without one.
 */
import { cp, mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Clock } from '../../core/clock.ts';
import { ErrorCode, TelhaError } from '../../core/errors.ts';
import type { Micros } from '../../core/types.ts';
import type { BackupSummary } from '../types.ts';
import { COLUMN_TUNING, COLUMNS } from './columns.ts';
import { RocksDatabase, type WriteOp } from './database.ts';
import type { GroupCommit } from './group-commit.ts';

/** The file that makes a directory a complete backup; written last. */
export const BACKUP_MARKER = 'TELHA-BACKUP.json';
const BACKUP_FORMAT = 'telha-rocksdb-backup';
const BACKUP_VERSION = 1;
/** Rows per write batch of the copy: big enough to amortize a write, small enough to bound its memory. */
const COPY_BATCH_ROWS = 4096;

/** What the marker file says. */
interface BackupMarker {
  readonly format: typeof BACKUP_FORMAT;
  readonly version: number;
  /** When the copy's cut was taken (µs since the epoch). */
  readonly takenAt: Micros;
  readonly jobs: number;
  readonly rows: number;
}

function refused(message: string): TelhaError {
  return new TelhaError(ErrorCode.FailedPrecondition, message);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Make a file's or a directory's contents durable. */
async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Write `text` to `path` and make it durable. */
async function writeDurably(path: string, text: string): Promise<void> {
  const handle = await open(path, 'w');
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Copy the store `db` (every column of `COLUMNS`, and `default`) to `target`, as the file's header says. */
export async function writeBackup(
  db: RocksDatabase,
  committer: GroupCommit,
  target: string,
  clock: Clock,
): Promise<BackupSummary> {
  const path = resolve(target);
  if (await exists(path)) throw refused(`${path} exists: back up to a new directory`);
  const partial = `${path}.partial`;
  // A directory left by a backup cut short holds nothing worth keeping.
  await rm(partial, { recursive: true, force: true });
  await mkdir(dirname(path), { recursive: true });
  const names = ['default', ...COLUMNS];
  const started = clock.now();
  const pinned = await committer.between(() => db.pin(names.map((name) => db.column(name))));
  const takenAt = clock.now();
  let jobs = 0;
  let rows = 0;
  let copy: RocksDatabase | null = null;
  try {
    copy = await RocksDatabase.open(partial, COLUMNS, COLUMN_TUNING);
    // The copy's batches are written on a thread of their own: on this one, each would hold up
    // the store's serving for as long as its write took.
    await copy.startWriteThread(0);
    let ops: WriteOp[] = [];
    let writing: Promise<void> | void = undefined;
    for (const [i, name] of names.entries()) {
      const column = copy.column(name);
      for await (const [key, value] of (pinned[i] as (typeof pinned)[number]).rows()) {
        ops.push({ column, key, value });
        rows++;
        if (name === 'jobs') jobs++;
        if (ops.length === COPY_BATCH_ROWS) {
          // One batch in flight while the next is read.
          await writing;
          writing = copy.writeBatch(ops, false);
          ops = [];
        }
      }
    }
    await writing;
    // The last batch syncs the write-ahead log, and with it every batch before it.
    await copy.writeBatch(ops, true);
  } finally {
    await Promise.all(pinned.map((column) => column.close()));
    await copy?.close();
  }
  const marker: BackupMarker = { format: BACKUP_FORMAT, version: BACKUP_VERSION, takenAt, jobs, rows };
  await writeDurably(join(partial, BACKUP_MARKER), `${JSON.stringify(marker)}\n`);
  await fsyncPath(partial);
  await rename(partial, path);
  await fsyncPath(dirname(path));
  return { path, jobs, rows, pauseMicros: takenAt - started, durationMicros: clock.now() - started };
}

/** The marker of a complete backup at `backup`; refuses a directory without a valid one. */
async function readMarker(backup: string): Promise<BackupMarker> {
  let text: string;
  try {
    text = await readFile(join(backup, BACKUP_MARKER), 'utf8');
  } catch {
    throw refused(
      `${backup} is not a complete Telha backup (it has no ${BACKUP_MARKER}, which a backup writes last): take another`,
    );
  }
  let marker: Partial<BackupMarker>;
  try {
    marker = JSON.parse(text) as Partial<BackupMarker>;
  } catch {
    throw refused(`${join(backup, BACKUP_MARKER)} is not JSON: ${backup} is not a Telha backup`);
  }
  if (marker.format !== BACKUP_FORMAT || marker.version !== BACKUP_VERSION) {
    throw refused(`${backup} is not a Telha backup of a version this build reads (format ${BACKUP_VERSION})`);
  }
  return marker as BackupMarker;
}

/**
 * Bring a store back from a backup: copy it to `target`, which must not exist or be empty (a
 * store's directory holding anything is never overwritten). Copied to `<target>.restoring` first
 * and renamed, so a restore cut short leaves no half store at `target`.
 */
export async function restoreBackup(backup: string, target: string): Promise<{ path: string; jobs: number }> {
  const from = resolve(backup);
  const path = resolve(target);
  const marker = await readMarker(from);
  if ((await exists(path)) && (await readdir(path)).length > 0) {
    throw refused(`the store directory ${path} is not empty: restore into a new or empty directory`);
  }
  const staging = `${path}.restoring`;
  await rm(staging, { recursive: true, force: true });
  await cp(from, staging, { recursive: true });
  await rm(join(staging, BACKUP_MARKER));
  await rm(join(staging, 'LOCK'), { force: true });
  for (const file of await readdir(staging)) await fsyncPath(join(staging, file));
  await fsyncPath(staging);
  await mkdir(dirname(path), { recursive: true });
  await rm(path, { recursive: true, force: true });
  await rename(staging, path);
  await fsyncPath(dirname(path));
  return { path, jobs: marker.jobs };
}
