/**
 * The commands that act on a store as a whole: `telha backup` (through a running server, or on
 * the store its config names when none runs), `telha restore`, `telha export` and `telha import`
 * (on the store the config names; a RocksDB store only while no server has it open). Loaded only
 * when one of them runs, so `telha jobs ...` never loads the engine and its stores.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { systemClock } from '../core/clock.ts';
import { exportStore, importStore, type TransferCounts } from '../engine/transfer.ts';
import { loadConfig, openStore, restoreBackup } from '../open.ts';
import { printLine, type CliIo, type OperatorClient } from './io.ts';

/** Where the store is when the command opens it itself: a config file, and `storage.path` over it. */
export interface StoreOptions {
  readonly config?: string;
  readonly data?: string;
}

async function withStore<T>(
  options: StoreOptions,
  io: Pick<CliIo, 'env'>,
  work: (store: Awaited<ReturnType<typeof openStore>>) => Promise<T>,
): Promise<T> {
  const config = await loadConfig({
    ...(options.config ? { file: options.config } : {}),
    env: io.env,
    ...(options.data ? { overrides: { storage: { path: options.data } } } : {}),
  });
  const store = await openStore(config);
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

const ms = (micros: number): string => `${(micros / 1000).toFixed(1)} ms`;

/**
 * `telha backup <dir>`: through the server (`client`), the copy written on its machine; with
 * `--config` or `--data`, on that store directly, which no server may have open.
 */
export async function backup(
  options: StoreOptions & { readonly dir: string; readonly json?: boolean },
  client: () => Pick<OperatorClient, 'backup'>,
  io: CliIo,
): Promise<number> {
  const path = resolve(options.dir);
  const summary =
    options.config === undefined && options.data === undefined
      ? await client().backup(path)
      : await withStore(options, io, async (store) => {
          if (store.backup === undefined) throw new Error(`the ${store.backend} store has no backup`);
          return store.backup(path);
        });
  if (options.json === true) printLine(io.stdout, summary);
  else {
    io.stdout(
      `backed up ${summary.jobs} jobs (${summary.rows} rows) to ${summary.path} in ${ms(summary.durationMicros)}; writes waited ${ms(summary.pauseMicros)}\n`,
    );
  }
  return 0;
}

/** `telha restore <backup> <store-dir>`. */
export async function restore(
  options: { readonly backup: string; readonly storeDir: string },
  io: CliIo,
): Promise<number> {
  const restored = await restoreBackup(options.backup, options.storeDir);
  io.stdout(`restored ${restored.jobs} jobs to ${restored.path}: start it with telha serve --data ${restored.path}\n`);
  return 0;
}

const describe = (counts: TransferCounts): string =>
  `${counts.job} jobs, ${counts.schedule} schedules, ${counts.pause} pauses, ${counts.limit} kind limits, ` +
  `${counts.tenant} tenant limits, ${counts.line} ordered-key lines, ${counts.holder} supersede-key holders`;

/** `telha export [--output <file>]`: the store's records as a stream, to the file or stdout. */
export async function exportRecords(options: StoreOptions & { readonly output?: string }, io: CliIo): Promise<number> {
  const counts = await withStore(options, io, async (store) => {
    if (options.output === undefined) return exportStore(store, io.stdout, systemClock);
    const file = createWriteStream(options.output);
    const write = async (text: string): Promise<void> => {
      if (!file.write(text)) await once(file, 'drain');
    };
    try {
      return await exportStore(store, write, systemClock);
    } finally {
      file.end();
      await once(file, 'close');
    }
  });
  io.stderr(`exported ${describe(counts)}\n`);
  return 0;
}

/** `telha import <file>`: read twice, checked whole before anything is written. */
export async function importRecords(
  options: StoreOptions & { readonly file: string; readonly merge?: boolean },
  io: CliIo,
): Promise<number> {
  const lines = (): AsyncIterable<string> =>
    createInterface({ input: createReadStream(options.file), crlfDelay: Infinity });
  const summary = await withStore(options, io, (store) =>
    importStore(store, lines, { merge: options.merge === true }, systemClock),
  );
  io.stdout(`imported ${describe(summary.written)}; skipped as held already: ${describe(summary.skipped)}\n`);
  return 0;
}
