/**
 * A child process for the upgrade test: writes numbered keys to one column of a RocksDB store
 * through a write-ahead log compressed with ZSTD, as the binding does by default and Telha did
 * before it turned that off, prints `written`, and waits to be killed. The memtable is far from
 * full, so the keys are in the log alone.
 * Usage: compressed-wal-child.ts <store path> <column> <keys>
 */
import { createRequire } from 'node:module';

interface RawBatch {
  _put(key: Buffer, value: Buffer, options: { column: object }): void;
  _writeSync(options: { sync: boolean }): void;
}
const require = createRequire(import.meta.url);
const { RocksLevel } = require('@nxtedition/rocksdb') as {
  RocksLevel: new (
    location: string,
    options: object,
  ) => {
    open(options: object): Promise<void>;
    readonly columns: Record<string, object>;
    _chainedBatch(): RawBatch;
  };
};

const [path, column, keys] = process.argv.slice(2);
if (path === undefined || column === undefined || keys === undefined) {
  throw new Error('usage: compressed-wal-child.ts <path> <column> <keys>');
}
const db = new RocksLevel(path, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
await db.open({ columns: { default: {}, [column]: {} }, createIfMissing: true, walCompression: true });
const handle = db.columns[column] as object;
for (let i = 0; i < Number(keys); i++) {
  const batch = db._chainedBatch();
  batch._put(Buffer.from(`key-${i}`), Buffer.from(`value-${i}`.repeat(10)), { column: handle });
  batch._writeSync({ sync: false });
}
process.stdout.write('written\n');
// Killed by the parent; the timer only keeps the process alive until then.
setInterval(() => undefined, 60_000);
