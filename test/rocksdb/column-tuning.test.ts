/**
 * Each column of a store opens with the tuning `COLUMN_TUNING` gives it, as RocksDB itself records
 * it in the store's OPTIONS file: the memtable size that bounds a crash's log replay, and the ZSTD
 * dictionary only where it is wanted.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { COLUMN_TUNING } from '../../src/storage/rocksdb/columns.ts';
import { RocksJobStore } from '../../src/storage/rocksdb/rocks-store.ts';
import { tempDir } from '../support/backends.ts';

/** `key=value` lines of each `[CFOptions "name"]` section of the newest OPTIONS file. */
function columnOptions(dir: string): Map<string, Map<string, string>> {
  const newest = readdirSync(dir)
    .filter((name) => name.startsWith('OPTIONS-'))
    .sort()
    .at(-1);
  assert.ok(newest !== undefined, 'RocksDB wrote an OPTIONS file');
  const columns = new Map<string, Map<string, string>>();
  let current: Map<string, string> | null = null;
  for (const line of readFileSync(join(dir, newest), 'utf8').split('\n')) {
    const section = /^\[CFOptions "([^"]+)"\]/.exec(line);
    if (section?.[1] !== undefined) {
      current = new Map();
      columns.set(section[1], current);
    } else if (line.startsWith('[')) {
      current = null;
    } else if (current !== null) {
      const eq = line.indexOf('=');
      if (eq > 0) current.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
    }
  }
  return columns;
}

describe('rocksdb column tuning', () => {
  it('opens every column with its memtable size and, only where asked, a ZSTD dictionary', async () => {
    const dir = tempDir();
    try {
      const store = await RocksJobStore.open({ path: dir });
      await store.close();
      const columns = columnOptions(dir);
      for (const [name, tuning] of Object.entries(COLUMN_TUNING)) {
        const options = columns.get(name);
        assert.ok(options !== undefined, `column ${name} is in the OPTIONS file`);
        assert.equal(options.get('write_buffer_size'), String(tuning.memtableBudget / 4), `${name}: memtable size`);
        const dictionary = /max_dict_bytes=(\d+)/.exec(options.get('compression_opts') ?? '')?.[1];
        assert.equal(dictionary !== undefined && dictionary !== '0', tuning.zstdDictionary, `${name}: dictionary`);
      }
      assert.equal(COLUMN_TUNING.ids.zstdDictionary, false, 'random ids get no dictionary');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
