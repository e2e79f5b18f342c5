import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { RocksDatabase, type WriteOp } from '../../src/storage/rocksdb/database.ts';
import { GroupCommit } from '../../src/storage/rocksdb/group-commit.ts';
import { tempDir } from '../support/backends.ts';

const key = (n: number): Buffer => Buffer.from(`k${n}`);

/** A database with (`thread`: every batch on) the write thread, and a group commit over it. */
async function open(
  dir: string,
  thread: boolean,
): Promise<{ db: RocksDatabase; commit: GroupCommit; written: number[] }> {
  const db = await RocksDatabase.open(dir, ['rows']);
  if (thread) await db.startWriteThread(0);
  const written: number[] = [];
  const commit = new GroupCommit(
    db,
    false,
    () => [],
    (ops) => written.push(ops.length),
  );
  return { db, commit, written };
}

for (const thread of [false, true]) {
  describe(`group commit, ${thread ? 'on the write thread' : 'inline'}`, () => {
    it('writes units staged while a batch is in flight in a later batch, in order, and answers a unit with no ops', async () => {
      const dir = tempDir();
      try {
        const { db, commit, written } = await open(dir, thread);
        const rows = db.column('rows');
        const put = (k: number, v: string): WriteOp => ({ column: rows, key: key(k), value: Buffer.from(v) });
        // Each turn overwrites the same rows; a batch landing out of order would leave an older value.
        const answered: Promise<void>[] = [];
        for (let turn = 0; turn < 20; turn++) {
          for (let k = 0; k < 10; k++) answered.push(commit.stage([put(k, `turn ${turn}`)]));
          answered.push(commit.stage([]));
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
        await Promise.all(answered);
        await commit.drain();
        assert.equal(
          written.reduce((a, b) => a + b, 0),
          200,
        );
        assert.ok(commit.batches >= 1);
        const values = db.getManySync(
          rows,
          Array.from({ length: 10 }, (_, k) => key(k)),
        );
        assert.deepEqual(
          values.map((v) => v?.toString()),
          Array.from({ length: 10 }, () => 'turn 19'),
        );
        await db.close();
        const reopened = await RocksDatabase.open(dir, ['rows']);
        assert.equal((await reopened.get(reopened.column('rows'), key(3)))?.toString(), 'turn 19');
        await reopened.close();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('stops at the first failed write: that batch, the units staged behind it and every later one are refused', async () => {
      const dir = tempDir();
      try {
        const { db } = await open(dir, thread);
        const rows = db.column('rows');
        // The real store, with its third write failing the way the store reports one (inline: a
        // throw; on the thread: a rejection).
        let writes = 0;
        const failing = {
          writeBatch: (ops: readonly WriteOp[], sync: boolean): Promise<void> | void => {
            if (++writes === 3) {
              const error = new Error('injected write failure');
              // On the thread, a batch is in flight for a while before it fails.
              if (thread) return new Promise((_, reject) => setImmediate(() => reject(error)));
              throw error;
            }
            return db.writeBatch(ops, sync);
          },
        };
        const commit = new GroupCommit(failing, false, () => []);
        const put = (k: number, v: string): WriteOp => ({ column: rows, key: key(k), value: Buffer.from(v) });
        await commit.stage([put(1, 'kept')]);
        await commit.stage([put(2, 'kept')]);
        const failed = commit.stage([put(3, 'lost')]);
        failed.catch(() => undefined);
        await new Promise<void>((resolve) => setImmediate(resolve));
        // Staged while the failing batch is in flight (on the thread) or after it failed (inline).
        const behind = commit.stage([put(4, 'refused')]);
        behind.catch(() => undefined);
        await assert.rejects(failed, /injected write failure/);
        await assert.rejects(behind, /injected write failure/);
        assert.equal(commit.failed, true);
        await assert.rejects(commit.stage([put(5, 'refused')]), /injected write failure/);
        await commit.drain();
        assert.equal(writes, 3);
        const found = db.getManySync(rows, [1, 2, 3, 4, 5].map(key));
        assert.deepEqual(
          found.map((v) => v?.toString()),
          ['kept', 'kept', undefined, undefined, undefined],
        );
        await db.close();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

describe('group commit, a quiet moment (between)', () => {
  /** A write thread that lands each batch when the test says so. */
  function heldWrites(): { commit: GroupCommit; landed: () => void; started: number[] } {
    const started: number[] = [];
    const waiting: (() => void)[] = [];
    const commit = new GroupCommit(
      {
        writeBatch: (ops: readonly WriteOp[]) => {
          started.push(ops.length);
          return new Promise<void>((resolve) => waiting.push(resolve));
        },
      },
      false,
      () => [],
    );
    return { commit, landed: () => waiting.shift()?.(), started };
  }
  const op = { column: {} as never, key: Buffer.from('k'), value: Buffer.from('v') };

  it('takes its cut only once the batch in flight has landed, and starts no batch until the cut is taken', async () => {
    const { commit, landed, started } = heldWrites();
    const first = commit.stage([op]);
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.deepEqual(started, [1], 'the first batch is in flight');
    let cutAt: number[] | null = null;
    const cut = commit.between(() => (cutAt = [...started]));
    const second = commit.stage([op, op]);
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(cutAt, null, 'no cut while a batch is being written');
    assert.deepEqual(started, [1], 'no batch starts while a cut waits');
    landed();
    await first;
    await cut;
    assert.deepEqual(cutAt, [1], 'the cut saw only the landed batch');
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.deepEqual(started, [1, 2], 'what was staged meanwhile is written right after the cut');
    landed();
    await second;
  });
});
