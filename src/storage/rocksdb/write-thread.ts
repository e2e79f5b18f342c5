/**
 * RocksDB's write on a thread of its own. The binding writes a batch only
 * synchronously, on the calling thread, and a drain through the server spent
 * a large share of its one JavaScript thread there (building the native batch,
 * the memtable inserts, the WAL append: bench/RESULTS.md, "The server's threads"). This thread opens the same native store
 * by its handle (the binding shares one RocksDB between threads that way),
 * takes each batch as one transferred buffer, and writes it, while the main
 * thread goes on serving. Group commit keeps one batch in flight at a time,
 * so batches land in the order they were made.
 */
import { Worker } from 'node:worker_threads';

/** What the thread runs (CommonJS, so it needs no loader for TypeScript). */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { RocksLevel } = require(workerData.binding);
const DELETE = 0xffffffff;
(async () => {
  const db = new RocksLevel(workerData.handle, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open({});
  const columns = workerData.columns.map((name) => ({ column: db.columns[name] }));
  parentPort.on('message', ({ id, bytes, sync }) => {
    const data = Buffer.from(bytes);
    const batch = db._chainedBatch();
    try {
      let at = 0;
      while (at < data.length) {
        const options = columns[data[at]];
        const keyLength = data.readUInt32LE(at + 1);
        const key = data.subarray(at + 5, at + 5 + keyLength);
        at += 5 + keyLength;
        const valueLength = data.readUInt32LE(at);
        at += 4;
        if (valueLength === DELETE) {
          batch._del(key, options);
        } else {
          batch._put(key, data.subarray(at, at + valueLength), options);
          at += valueLength;
        }
      }
      batch._writeSync({ sync });
      parentPort.postMessage({ id });
    } catch (error) {
      parentPort.postMessage({ id, error: String(error && error.stack || error) });
    } finally {
      // Out of abstract-level's open resources too, or each batch would stay there (database.ts).
      batch._closeSync();
      db.detachResource(batch);
    }
  });
  parentPort.postMessage({ ready: true });
})().catch((error) => parentPort.postMessage({ ready: false, error: String(error && error.stack || error) }));
`;

const DELETE = 0xffff_ffff;

/** One put (or, with a `null` value, delete) of a batch: `database.ts`'s `WriteOp`. */
interface BatchOp {
  readonly column: object;
  readonly key: Buffer;
  readonly value: Buffer | null;
}

interface Reply {
  readonly id?: number;
  readonly ready?: boolean;
  readonly error?: string;
}

export class WriteThread {
  private next = 1;
  private readonly waiting = new Map<number, { resolve(): void; reject(error: Error): void }>();
  private broken: Error | null = null;

  private constructor(
    private readonly worker: Worker,
    /** A column handle's index in the thread's list. */
    private readonly columnIndex: ReadonlyMap<object, number>,
  ) {
    worker.on('message', (reply: Reply) => {
      if (reply.id === undefined) return;
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (this.waiting.size === 0) worker.unref();
      if (reply.error === undefined) waiter?.resolve();
      else waiter?.reject(new Error(`RocksDB write failed: ${reply.error}`));
    });
    const breakDown = (error: Error): void => {
      this.broken ??= error;
      for (const waiter of this.waiting.values()) waiter.reject(this.broken);
      this.waiting.clear();
      worker.unref();
    };
    worker.on('error', breakDown);
    worker.on('exit', (code) => breakDown(new Error(`the RocksDB write thread exited (code ${code})`)));
    // The thread keeps the process alive only while a write is in flight: a store never closed
    // (an open that failed half-way) must not hold the process up. After the listeners: adding a
    // 'message' listener refs the worker's port again.
    worker.unref();
  }

  /**
   * Start a thread writing to the store open at `handle` (`RocksLevel.handle`); `columns` are the
   * column names, `columnHandles` their handles in this thread, in the same order.
   */
  static async start(
    handle: bigint,
    binding: string,
    columns: readonly string[],
    columnHandles: readonly object[],
  ): Promise<WriteThread> {
    const worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { handle, binding, columns } });
    const reply = await new Promise<Reply>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (reply.ready !== true) {
      await worker.terminate();
      throw new Error(`the RocksDB write thread did not start: ${reply.error ?? 'no reason given'}`);
    }
    return new WriteThread(worker, new Map(columnHandles.map((column, i) => [column, i])));
  }

  /** Write `ops` as one atomic batch on the thread; resolves once RocksDB has it. */
  write(ops: readonly BatchOp[], sync: boolean): Promise<void> {
    if (this.broken !== null) return Promise.reject(this.broken);
    const bytes = this.pack(ops);
    const id = this.next++;
    const done = new Promise<void>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
    this.worker.ref();
    this.worker.postMessage({ id, bytes, sync }, [bytes]);
    return done;
  }

  /** Every op in one buffer, to transfer rather than copy: [column u8][key length u32][key][value length u32 | DELETE][value]. */
  private pack(ops: readonly BatchOp[]): ArrayBuffer {
    let size = 0;
    for (const op of ops) size += 9 + op.key.length + (op.value?.length ?? 0);
    const bytes = new ArrayBuffer(size);
    const out = Buffer.from(bytes);
    let at = 0;
    for (const op of ops) {
      const column = this.columnIndex.get(op.column);
      if (column === undefined) throw new Error('a write names a column the write thread does not know');
      out[at] = column;
      out.writeUInt32LE(op.key.length, at + 1);
      out.set(op.key, at + 5);
      at += 5 + op.key.length;
      if (op.value === null) {
        out.writeUInt32LE(DELETE, at);
        at += 4;
      } else {
        out.writeUInt32LE(op.value.length, at);
        out.set(op.value, at + 4);
        at += 4 + op.value.length;
      }
    }
    return bytes;
  }

  /** Stop the thread; call once no write is in flight (group commit drained). */
  async close(): Promise<void> {
    this.broken ??= new Error('the RocksDB write thread is closed');
    await this.worker.terminate();
  }
}
