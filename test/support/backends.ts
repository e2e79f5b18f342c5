/** Harness factories for every backend, shared by the conformance suite and other cross-backend tests. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/core/clock.ts';
import pg from 'pg';
import { Queue } from '../../src/engine/queue.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { MemoryJobStore } from '../../src/storage/memory/memory-store.ts';
import { RocksJobStore, type RocksStoreOptions } from '../../src/storage/rocksdb/rocks-store.ts';
import type { JobStore } from '../../src/storage/types.ts';
import type { TelhaConfig } from '../../src/core/config.ts';
import { TEST_PG_URL } from './postgres-url.ts';
import { giveBack, takeSchema, uniqueSchema } from './pg-schemas.ts';
import {
  testConfig,
  type Harness,
  type HarnessFactory,
  type HarnessOptions,
} from '../../src/testing/conformance/harness.ts';

export const memoryHarness: HarnessFactory = (options: HarnessOptions = {}): Promise<Harness> => {
  const clock = new ManualClock();
  const config = testConfig(options.config);
  const { queue, store } = queueOn(new MemoryJobStore(), config, clock);
  return Promise.resolve({
    queue,
    store,
    clock,
    config,
    reopen: () => Promise.reject(new Error('the memory store does not survive a reopen')),
    close: () => queue.close(),
  });
};

export function tempDir(prefix = 'telha-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A queue on `store` as the conformance suite wants it: the test's clock, no timers. */
function queueOn(store: JobStore, config: TelhaConfig, clock: ManualClock): { queue: Queue; store: JobStore } {
  const queue = new Queue({ store, config, clock, services: false });
  return { queue, store };
}

/** RocksDB writing every batch on the calling thread (a server on two cores). */
export const rocksHarness: HarnessFactory = (options: HarnessOptions = {}): Promise<Harness> =>
  rocksHarnessWith({}, options);

/** RocksDB with every batch written on the write thread. */
export const rocksWriteThreadHarness: HarnessFactory = (options: HarnessOptions = {}): Promise<Harness> =>
  rocksHarnessWith({ writeThread: true, writeThreadMinOps: 0 }, options);

async function rocksHarnessWith(
  storeOptions: Omit<RocksStoreOptions, 'path' | 'clock'>,
  options: HarnessOptions,
): Promise<Harness> {
  const clock = new ManualClock();
  const dir = tempDir();
  const config = testConfig(options.config, dir);
  const open = async (): Promise<{ queue: Queue; store: JobStore }> =>
    queueOn(await RocksJobStore.open({ ...storeOptions, path: dir, clock }), config, clock);
  return reopenable(open, clock, config, () => rmSync(dir, { recursive: true, force: true }));
}

export { TEST_PG_URL, uniqueSchema };

/**
 * A fresh store per harness: a migrated schema of its own, emptied back to its migrated state
 * on close for the next harness of this process (`pg-schemas.ts`), so cases never see each
 * other's jobs.
 */
export const postgresHarness: HarnessFactory = async (options: HarnessOptions = {}): Promise<Harness> => {
  const clock = new ManualClock();
  const schema = await takeSchema();
  const config = testConfig(options.config);
  const open = async (): Promise<{ queue: Queue; store: JobStore }> =>
    queueOn(await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 4 }), config, clock);
  return reopenable(open, clock, config, () => giveBack(schema));
};

/** A harness over a store that survives a reopen; `cleanup` runs after the last close. */
async function reopenable(
  open: () => Promise<{ queue: Queue; store: JobStore }>,
  clock: ManualClock,
  config: Harness['config'],
  cleanup: () => void | Promise<void>,
): Promise<Harness> {
  let current = await open();
  return {
    get queue() {
      return current.queue;
    },
    get store() {
      return current.store;
    },
    clock,
    config,
    async reopen() {
      await current.queue.close();
      current = await open();
      return current.queue;
    },
    async close() {
      await current.queue.close();
      await cleanup();
    },
  };
}

/** Drop a test's schema, with whatever it holds. */
export async function dropTestSchema(schema: string): Promise<void> {
  const admin = new pg.Client({ connectionString: TEST_PG_URL });
  await admin.connect();
  try {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await admin.end();
  }
}
