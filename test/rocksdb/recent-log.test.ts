/**
 * The RocksDB store serves live watchers from the newest log entries it keeps in memory. What a
 * reader gets from there must be exactly what the same read gets from the store itself: the same
 * entries, positions and pages, for a reader at the head, behind it, and with a filter.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { makeConfig } from '../../src/core/config.ts';
import { tenantScope } from '../../src/core/types.ts';
import type { LogFilter, LogPage, LogRecord } from '../../src/core/transitions-log.ts';
import { openQueue } from '../../src/open.ts';
import { RecentLog } from '../../src/storage/rocksdb/recent-log.ts';
import { tempDir } from '../support/backends.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');
const entry = (jobId: string): LogRecord => ({ jobId }) as LogRecord;

/** Bytes as hex, objects with their keys sorted: a record decoded from the store holds Buffers where the written one held Uint8Arrays. */
function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return `bytes:${Buffer.from(value).toString('hex')}`;
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([key, field]) => [key, plain(field)]),
    );
  }
  return value;
}

/** Every page from `from` to the head, `limit` entries scanned at a time. */
async function readAll(
  read: (position: string, limit: number, filter: LogFilter) => Promise<LogPage>,
  from: string,
  limit: number,
  filter: LogFilter,
): Promise<LogPage[]> {
  const pages: LogPage[] = [];
  let position = from;
  for (;;) {
    const page = await read(position, limit, filter);
    if (page.position === position) return pages;
    pages.push(page);
    position = page.position;
  }
}

describe('the RocksDB store’s recent log entries', () => {
  it('give every reader the pages the store itself gives after a reopen', async () => {
    const dir = tempDir();
    try {
      const config = makeConfig({ storage: { path: dir } });
      let queue = await openQueue({ config, services: false });
      const start = await queue.feed.head();
      for (let round = 0; round < 3; round++) {
        await queue.enqueueBatch(
          Array.from({ length: 40 }, (_, i) => ({ kind: i % 2 === 0 ? 'mail.send' : 'report.build', payload: 'x' })),
          round === 1 ? globex : acme,
        );
        for (const job of await queue.lease({ workerId: 'w1', limit: 25 })) {
          const fence = { workerId: 'w1', leaseGeneration: job.leaseGeneration };
          if (job.kind === 'mail.send') await queue.complete(job.jobId, fence, { result: Buffer.from('{"ok":1}') });
          else await queue.heartbeat(job.jobId, fence, { progress: '{"step":2}' });
        }
      }
      const filters: LogFilter[] = [
        { scope: { type: 'any' }, kindPrefix: '', jobId: null },
        { scope: acme, kindPrefix: 'mail.', jobId: null },
        { scope: globex, kindPrefix: '', jobId: null },
      ];
      const read = (position: string, limit: number, filter: LogFilter) => queue.feed.read(position, limit, filter);
      const fromMemory = [];
      for (const filter of filters)
        for (const limit of [7, 500]) fromMemory.push(await readAll(read, start, limit, filter));
      assert.ok(fromMemory[0]?.flat().length, 'the reads found entries');
      await queue.close();

      queue = await openQueue({ config, services: false });
      const fromStore = [];
      for (const filter of filters)
        for (const limit of [7, 500]) fromStore.push(await readAll(read, start, limit, filter));
      await queue.close();
      assert.deepEqual(plain(fromMemory), plain(fromStore));
      assert.equal(
        fromMemory[0]?.flatMap((page) => page.entries).length,
        40 * 3 + 25 * 3 * 2,
        'every enqueue, lease and completion or progress report',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('RecentLog', () => {
  it('covers the newest entries up to its capacity, with holes where a number was never written', () => {
    const log = new RecentLog(4);
    assert.equal(log.covers(1), false, 'empty, it covers nothing');
    log.add(10, entry('a'));
    log.add(11, entry('b'));
    log.add(13, entry('d'));
    assert.equal(log.covers(9), false);
    assert.equal(log.covers(10), true);
    assert.deepEqual(
      [10, 11, 12, 13, 14].map((seq) => log.at(seq)?.jobId),
      ['a', 'b', undefined, 'd', undefined],
    );
    log.add(14, entry('e'));
    log.add(15, entry('f'));
    assert.equal(log.covers(11), false, 'the oldest went out');
    assert.equal(log.covers(12), true);
    assert.deepEqual(
      [12, 13, 14, 15].map((seq) => log.at(seq)?.jobId),
      [undefined, 'd', 'e', 'f'],
    );
    log.add(30, entry('z'));
    assert.equal(log.covers(26), false);
    assert.equal(log.covers(27), true);
    assert.deepEqual(
      [27, 28, 29, 30].map((seq) => log.at(seq)?.jobId),
      [undefined, undefined, undefined, 'z'],
    );
    log.add(29, entry('early'));
    assert.equal(log.covers(29), false, 'an entry out of order: it covers nothing it has seen');
    assert.equal(log.covers(31), false);
    log.add(30, entry('late'));
    assert.equal(log.covers(30), false, 'nor anything below the newest it had');
    log.add(32, entry('y'));
    assert.equal(log.covers(31), false);
    assert.equal(log.covers(32), true, 'and covers again from the next one in order');
    assert.equal(log.at(32)?.jobId, 'y');
    log.clear();
    assert.equal(log.covers(30), false);
  });
});
