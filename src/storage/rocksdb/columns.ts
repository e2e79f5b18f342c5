/**
 * The column families of a Telha RocksDB store, how each is tuned, and the meta rows the store
 * keeps in `default`. What each column holds is described in `rocks-store.ts`.
 */
import type { ColumnHandle, ColumnTuning, RocksDatabase } from './database.ts';

/** The column families of a Telha store, besides `default` (the meta rows). */
export const COLUMNS = [
  'jobs',
  'ids',
  'idempotency',
  'finished',
  'counts',
  'transitions',
  'supersede',
  'order',
] as const;
const KiB = 1024;
const MiB = 1024 * KiB;
/**
 * Each column's tuning (see `ColumnTuning`).
 *
 * Memtables sized by how much each column is written, so that RocksDB's derived write-ahead log cap
 * (4 x the write buffers summed, ≈180 MiB here) forces the rarely written columns (meta, counters)
 * to flush and the logs to go. Against RocksDB's defaults (64 MiB a memtable, two a column: a log
 * of up to 3.5 GiB), a store killed after 1M jobs reopens an order of magnitude faster (`npm run
 * bench:crash-open`, bench/RESULTS.md). Halving every budget again shaved little more off the open
 * and cost write rate; doubling the jobs column's (fewer versions of a job reach its files) made a
 * reopen slower (bench/RESULTS.md, "The measurements behind the code's choices").
 *
 * No ZSTD dictionary for two columns, saving a third of the compactions' CPU in a drain (bench/
 * RESULTS.md): `ids` holds random job ids, which no dictionary shrinks, and `transitions` is pruned
 * by `watch.retain_*`, so its files stay bounded (about twice the bytes without one).
 */
export const COLUMN_TUNING: Readonly<Record<(typeof COLUMNS)[number] | 'default', ColumnTuning>> = {
  jobs: { memtableBudget: 16 * MiB, zstdDictionary: true },
  transitions: { memtableBudget: 8 * MiB, zstdDictionary: false },
  ids: { memtableBudget: 2 * MiB, zstdDictionary: false },
  finished: { memtableBudget: 2 * MiB, zstdDictionary: true },
  idempotency: { memtableBudget: 512 * KiB, zstdDictionary: true },
  counts: { memtableBudget: 512 * KiB, zstdDictionary: true },
  supersede: { memtableBudget: 512 * KiB, zstdDictionary: true },
  order: { memtableBudget: 512 * KiB, zstdDictionary: true },
  default: { memtableBudget: 512 * KiB, zstdDictionary: true },
};

/** The `created_at` high-water mark, saved with the batches that move it. */
export const META_LAST_CREATED_AT = Buffer.from('meta/last_created_at');
/** The store's random id, which its log positions carry. */
export const META_LOG_ID = Buffer.from('meta/log_id');
/** The last seq pruned from the log: a position before it has lost entries. */
export const META_LOG_PRUNED = Buffer.from('meta/log_pruned');

/** The store's open column handles; `log` is the `transitions` column, `meta` is `default`. */
export interface Columns {
  readonly jobs: ColumnHandle;
  readonly ids: ColumnHandle;
  readonly idempotency: ColumnHandle;
  readonly finished: ColumnHandle;
  readonly counts: ColumnHandle;
  readonly supersede: ColumnHandle;
  readonly order: ColumnHandle;
  readonly log: ColumnHandle;
  readonly meta: ColumnHandle;
}

/** The handles of a store's columns in `db`, opened with `COLUMNS`. */
export function openColumns(db: RocksDatabase): Columns {
  return {
    jobs: db.column('jobs'),
    ids: db.column('ids'),
    idempotency: db.column('idempotency'),
    finished: db.column('finished'),
    counts: db.column('counts'),
    supersede: db.column('supersede'),
    order: db.column('order'),
    log: db.column('transitions'),
    meta: db.column('default'),
  };
}
