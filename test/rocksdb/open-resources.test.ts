/**
 * A write leaves nothing open behind it. The binding's chained batch registers itself in
 * abstract-level's set of open resources (closed with the database) and only the batch's own
 * asynchronous `close()` takes it out again; the store frees its batches with `_closeSync`, so
 * before the fix every write since the store opened stayed in that set (a leak of one batch
 * object per write, on a server that runs for weeks).
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { RocksDatabase } from '../../src/storage/rocksdb/database.ts';
import { tempDir } from '../support/backends.ts';

/** abstract-level's set of a database's open resources (iterators, batches), by its symbol's name. */
function openResources(database: RocksDatabase): Set<unknown> {
  const level = (database as unknown as { db: object }).db;
  const symbol = Object.getOwnPropertySymbols(level).find((s) => s.description === 'resources');
  const resources = symbol === undefined ? undefined : (level as Record<symbol, unknown>)[symbol];
  assert.ok(resources instanceof Set, "abstract-level's resources set was not found");
  return resources;
}

describe('rocksdb open resources', () => {
  it('leaves no batch open after writes, however many', async () => {
    const dir = tempDir();
    try {
      const database = await RocksDatabase.open(dir, ['rows']);
      try {
        const rows = database.column('rows');
        const before = openResources(database).size;
        for (let i = 0; i < 100; i++) {
          database.write([{ column: rows, key: Buffer.from(`k${i}`), value: Buffer.from(`v${i}`) }], false);
        }
        database.write([{ column: rows, key: Buffer.from('k0'), value: null }], false);
        assert.equal(openResources(database).size, before);
        assert.equal((await database.get(rows, Buffer.from('k99')))?.toString(), 'v99');
        assert.equal(await database.get(rows, Buffer.from('k0')), undefined);
      } finally {
        await database.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
