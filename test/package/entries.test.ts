/**
 * What each public entry loads. A producer importing `telha/client` must not
 * pay for `pg` or the native RocksDB binding, and `import 'telha'` must load a
 * backend only when `openQueue` is asked for it. Checked by importing each
 * entry in a fresh process that records every module it resolves.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const recorder = fileURLToPath(new URL('../support/record-loads.mjs', import.meta.url));
const src = (path: string): string => fileURLToPath(new URL(`../../src/${path}`, import.meta.url));

/** Every module URL that importing `entry` (then running `then`) resolves. */
async function loadsOf(entry: string, then = ''): Promise<string[]> {
  const script = `const m = await import(${JSON.stringify(entry)}); ${then}`;
  const { stderr } = await run(process.execPath, [
    '--import',
    'tsx',
    '--import',
    recorder,
    '--input-type=module',
    '-e',
    script,
  ]);
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('load:'))
    .map((line) => line.slice(5));
}

const PG = /\/node_modules\/pg\//;
const ROCKSDB = /\/node_modules\/@nxtedition\/rocksdb\//;

describe('public entries', () => {
  it('telha/client loads neither pg, RocksDB nor the engine', async () => {
    const loads = await loadsOf(src('client/index.ts'));
    assert.ok(
      loads.some((url) => url.includes('/src/client/client.ts')),
      'the recorder saw the client load',
    );
    assert.deepEqual(
      loads.filter((url) => PG.test(url) || ROCKSDB.test(url) || /\/src\/(engine|storage)\//.test(url)),
      [],
    );
  });

  it('telha loads no backend until openQueue names one', async () => {
    const loads = await loadsOf(src('index.ts'));
    assert.ok(loads.some((url) => url.includes('/src/engine/queue.ts')));
    assert.deepEqual(
      loads.filter((url) => PG.test(url) || ROCKSDB.test(url)),
      [],
    );
  });

  it('telha loads only the memory store for an in-memory queue', async () => {
    const loads = await loadsOf(src('index.ts'), 'await (await m.openQueue({ inMemory: true })).close();');
    assert.ok(loads.some((url) => url.includes('/src/storage/memory/memory-store.ts')));
    assert.deepEqual(
      loads.filter((url) => PG.test(url) || ROCKSDB.test(url)),
      [],
    );
  });
});
