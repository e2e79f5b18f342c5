/** Opening a queue from configuration: the store it names, the services it runs. */
import { readFile } from 'node:fs/promises';
import { parse as parseToml } from 'smol-toml';
import type { BackoffByKind } from '../core/backoff.ts';
import type { Clock } from '../core/clock.ts';
import { configFromEnv, DEFAULT_CONFIG, resolveConfig, type ConfigInput, type TelhaConfig } from '../core/config.ts';
import { invalidArgument } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { MemoryJobStore } from '../storage/memory/memory-store.ts';
import { PostgresJobStore } from '../storage/postgres/postgres-store.ts';
import { RocksJobStore } from '../storage/rocksdb/rocks-store.ts';
import type { JobStore } from '../storage/types.ts';
import { Queue } from './queue.ts';

export interface OpenQueueOptions {
  readonly config?: TelhaConfig;
  /** Use the in-memory reference store instead of the configured one (tests, demos). Nothing survives a restart. */
  readonly inMemory?: boolean;
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly backoffByKind?: BackoffByKind;
  /** Run the reaper and maintenance on timers. Default `true`. */
  readonly services?: boolean;
}

/** Open the store the configuration names and a queue on it. */
export async function openQueue(options: OpenQueueOptions = {}): Promise<Queue> {
  const config = options.config ?? DEFAULT_CONFIG;
  const store: JobStore = options.inMemory ? new MemoryJobStore() : await openStore(config, options);
  return new Queue({
    store,
    config,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.backoffByKind ? { backoffByKind: options.backoffByKind } : {}),
    ...(options.services === undefined ? {} : { services: options.services }),
  });
}

async function openStore(config: TelhaConfig, options: OpenQueueOptions): Promise<JobStore> {
  const logger = options.logger ? { logger: options.logger } : {};
  switch (config.storage.kind) {
    case 'rocksdb':
      return RocksJobStore.open({
        path: config.storage.path,
        durability: config.storage.durability,
        ...logger,
        ...(options.clock ? { clock: options.clock } : {}),
      });
    case 'postgres': {
      const url = config.storage.url;
      if (url === undefined) throw invalidArgument('storage.url', 'storage.kind = "postgres" needs storage.url');
      return PostgresJobStore.open({
        url,
        schema: config.storage.schema,
        pollIntervalMs: config.storage.poll_interval_ms,
        durability: config.storage.durability,
        ...logger,
      });
    }
  }
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
