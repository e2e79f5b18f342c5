/**
 * The composition root: the one module that knows which backends exist. It
 * turns configuration into a store and a queue on it. Each backend is loaded
 * only when the configuration names it, so a program that runs on RocksDB
 * never loads `pg`, and one on PostgreSQL never loads the native RocksDB
 * binding.
 */
import { availableParallelism } from 'node:os';
import { readFile } from 'node:fs/promises';
import { parse as parseToml } from 'smol-toml';
import type { Clock } from './core/clock.ts';
import { configFromEnv, DEFAULT_CONFIG, resolveConfig, type ConfigInput, type TelhaConfig } from './core/config.ts';
import { invalidArgument } from './core/errors.ts';
import type { Logger } from './core/logger.ts';
import { Queue } from './engine/queue.ts';
import type { JobStore } from './storage/types.ts';

export interface OpenQueueOptions {
  readonly config?: TelhaConfig;
  /** Use the in-memory reference store instead of the configured one (tests, demos). Nothing survives a restart. */
  readonly inMemory?: boolean;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Run the reaper and maintenance on timers. Default `true`. */
  readonly services?: boolean;
}

/** Open the store the configuration names and a queue on it. */
export async function openQueue(options: OpenQueueOptions = {}): Promise<Queue> {
  const config = options.config ?? DEFAULT_CONFIG;
  const store = await openStore(config, options);
  return new Queue({
    store,
    config,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.services === undefined ? {} : { services: options.services }),
  });
}

/** The store `storage.kind` names (or the in-memory one), its backend loaded on first use. */
export async function openStore(
  config: TelhaConfig,
  options: Pick<OpenQueueOptions, 'inMemory' | 'clock' | 'logger'> = {},
): Promise<JobStore> {
  const logger = options.logger ? { logger: options.logger } : {};
  if (options.inMemory) {
    const { MemoryJobStore } = await import('./storage/memory/memory-store.ts');
    return new MemoryJobStore({ transitionsLog: config.watch.enabled });
  }
  switch (config.storage.kind) {
    case 'rocksdb': {
      const { ReopeningRocksStore } = await import('./storage/rocksdb/reopening-store.ts');
      return ReopeningRocksStore.open({
        path: config.storage.path,
        durability: config.storage.durability,
        transitionsLog: config.watch.enabled,
        writeThread: writeThreadWanted(config.storage.write_thread),
        ...logger,
        ...(options.clock ? { clock: options.clock } : {}),
      });
    }
    case 'postgres': {
      const url = config.storage.url;
      if (url === undefined) throw invalidArgument('storage.url', 'storage.kind = "postgres" needs storage.url');
      const { PostgresJobStore } = await import('./storage/postgres/postgres-store.ts');
      return PostgresJobStore.open({
        url,
        schema: config.storage.schema,
        pollIntervalMs: config.storage.poll_interval_ms,
        durability: config.storage.durability,
        preparedStatements: config.storage.prepared_statements,
        transitionsLog: config.watch.enabled,
        ...logger,
      });
    }
  }
}

/**
 * Bring a RocksDB store back from a backup (`telha backup`) into `storeDir`, which must not exist
 * or be empty; refuses a directory that is not a complete backup.
 */
export async function restoreBackup(backup: string, storeDir: string): Promise<{ path: string; jobs: number }> {
  const { restoreBackup: restore } = await import('./storage/rocksdb/backup.ts');
  return restore(backup, storeDir);
}

/**
 * Load configuration: defaults, then the TOML file (if given, or named by
 * `TELHA_CONFIG`), then `TELHA_<SECTION>__<KEY>` environment variables, then `overrides`.
 * Unknown keys, wrong types and refused values throw, naming the key.
 */
export async function loadConfig(
  options: {
    file?: string;
    env?: Readonly<Record<string, string | undefined>>;
    /** A last layer, e.g. command-line flags. */
    overrides?: ConfigInput;
  } = {},
): Promise<TelhaConfig> {
  const env = options.env ?? process.env;
  const file = options.file ?? env['TELHA_CONFIG'];
  const layers: { source: string; values: ConfigInput }[] = [];
  if (file !== undefined && file !== '') {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw invalidArgument('config', `cannot read config file ${file}: ${(error as Error).message}`);
    }
    let values: ConfigInput;
    try {
      values = parseToml(text);
    } catch (error) {
      throw invalidArgument('config', `config file ${file} is not valid TOML: ${(error as Error).message}`);
    }
    layers.push({ source: file, values });
  }
  layers.push({ source: 'environment', values: configFromEnv(env) });
  if (options.overrides) layers.push({ source: 'command line', values: options.overrides });
  return resolveConfig(layers);
}

/** `storage.write_thread`, with `auto` decided by the cores this process may use. */
function writeThreadWanted(setting: boolean | 'auto'): boolean {
  return setting === 'auto' ? availableParallelism() > 2 : setting;
}
