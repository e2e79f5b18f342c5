/**
 * The shared services the peers run on: small PostgreSQL and Redis helpers
 * (one-off queries, schema resets, key deletion, versions and settings).
 */
import { Redis } from 'ioredis';
import pg from 'pg';

/** Where everything lives; the peers' database is their own, never the tests' `test` database. */
export const PG_ADMIN_URL = process.env['BENCH_PEERS_PG_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const PG_DATABASE = process.env['BENCH_PEERS_PG_DATABASE'] ?? 'telha_bench';
export const PG_URL = process.env['BENCH_PEERS_PG_URL'] ?? `postgres://postgres@127.0.0.1:5432/${PG_DATABASE}`;
export const REDIS = {
  host: process.env['BENCH_PEERS_REDIS_HOST'] ?? '127.0.0.1',
  port: Number(process.env['BENCH_PEERS_REDIS_PORT'] ?? 6379),
};

/** The peers' connection URL with `synchronous_commit=off` for every connection it opens (libpq `options`). */
export function asyncCommitUrl(url: string): string {
  const separator = url.includes('?') ? '&' : '?';
  return `${url}${separator}options=${encodeURIComponent('-c synchronous_commit=off')}`;
}

/** One short-lived connection for one piece of work. */
export async function withPg<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function ensureDatabase(): Promise<void> {
  await withPg(PG_ADMIN_URL, async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [PG_DATABASE]);
    if (rowCount === 0) await client.query(`CREATE DATABASE ${pg.escapeIdentifier(PG_DATABASE)}`);
  });
}

export async function dropSchema(schema: string): Promise<void> {
  await withPg(PG_URL, (client) => client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`));
}

export async function pgSettings(url: string, names: readonly string[]): Promise<Record<string, string>> {
  return withPg(url, async (client) => {
    const out: Record<string, string> = {};
    for (const name of names) {
      const { rows } = await client.query<{ setting: string }>('SELECT current_setting($1) AS setting', [name]);
      out[name] = rows[0]?.setting ?? '?';
    }
    return out;
  });
}

export function redisClient(): Redis {
  // BullMQ needs maxRetriesPerRequest: null on the connections its workers block on.
  return new Redis({ host: REDIS.host, port: REDIS.port, maxRetriesPerRequest: null, lazyConnect: false });
}

/** Delete every key matching `pattern` (SCAN + UNLINK, so Redis never blocks on a huge KEYS). */
export async function deleteKeys(redis: Redis, pattern: string): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 5_000);
    cursor = next;
    if (keys.length > 0) deleted += await redis.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}

/** `INFO` fields, e.g. `redis_version`. */
export async function redisInfo(redis: Redis, section: string): Promise<Record<string, string>> {
  const text = await redis.info(section);
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('#')) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}

export async function redisConfig(redis: Redis, name: string): Promise<string> {
  const reply = await redis.config('GET', name);
  return reply[1] ?? '';
}
