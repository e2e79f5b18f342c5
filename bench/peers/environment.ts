/**
 * The run's surroundings: the two durability tiers, Redis persistence
 * switched per tier and always restored, and what the report says about the
 * machine, the packages and the servers.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { installedPackage, type InstalledPackage } from './releases.ts';
import { asyncCommitUrl, PG_URL, pgSettings, redisConfig, redisInfo, withPg } from './services.ts';
import type { Tier, TierId } from './types.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const TIERS: Readonly<Record<TierId, Tier>> = {
  process: {
    id: 'process',
    title:
      'process-crash-safe: Telha storage.durability=process | Redis appendonly yes, appendfsync everysec | PostgreSQL synchronous_commit=off',
    pgUrl: asyncCommitUrl(PG_URL),
    redis: { appendonly: 'yes', appendfsync: 'everysec' },
  },
  fsync: {
    id: 'fsync',
    title:
      'fsync: Telha storage.durability=fsync | Redis appendonly yes, appendfsync always | PostgreSQL defaults (synchronous_commit=on)',
    pgUrl: PG_URL,
    redis: { appendonly: 'yes', appendfsync: 'always' },
  },
};

/** What a run records in Redis before it changes anything there, so a later run can undo it if this one is killed. */
interface RunMarker {
  readonly pid: number;
  readonly host: string;
  /** The AOF directory, and whether it existed before the run turned AOF on. */
  readonly aofDir: string | null;
  readonly aofDirExisted: boolean;
}

/** Outside BullMQ's `telha-bench-peers:` prefix, whose keys are deleted at every open. */
const MARKER = 'telha-bench-peers-run';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Switches Redis persistence per tier. `restore` puts back what this machine
 * runs with (`appendonly no`, `appendfsync everysec`) and deletes the AOF
 * directory if this run created it, so Redis again keeps nothing on disk.
 *
 * A marker key doubles as a lock: a second run while one is going would share
 * its keys, schemas and Redis settings, so it refuses to start; a marker left
 * by a run that was killed outright (SIGKILL: no chance to restore) is undone
 * by the next run before it starts.
 */
/** How a PostgreSQL-backed system's commits are set in a tier, for its settings line. */
export function pgCommitSetting(tier: Tier): string {
  return tier.id === 'process'
    ? 'synchronous_commit=off on its connections'
    : 'PostgreSQL defaults (synchronous_commit=on)';
}

export class RedisPersistence {
  private marker: RunMarker | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly log: (message: string) => void,
  ) {}

  async acquire(): Promise<void> {
    const dir = await redisConfig(this.redis, 'dir');
    const name = await redisConfig(this.redis, 'appenddirname');
    const aofDir = name ? path.join(dir, name) : null;
    for (;;) {
      // Looked at afresh on every pass: undoing a killed run below may just have removed the directory.
      const mine: RunMarker = {
        pid: process.pid,
        host: os.hostname(),
        aofDir,
        aofDirExisted: aofDir === null || existsSync(aofDir),
      };
      if ((await this.redis.set(MARKER, JSON.stringify(mine), 'NX')) === 'OK') {
        this.marker = mine;
        return;
      }
      const raw = await this.redis.get(MARKER);
      if (raw === null) continue;
      const other = JSON.parse(raw) as RunMarker;
      if (other.host === mine.host && alive(other.pid))
        throw new Error(
          `another bench:peers run (pid ${other.pid}) is using Redis and PostgreSQL; two runs would share keys, schemas and settings`,
        );
      this.log(`a previous run (pid ${other.pid}) was killed before restoring Redis persistence: restoring it now`);
      await this.undo(other);
    }
  }

  async apply(tier: Tier): Promise<void> {
    if (this.marker === null) throw new Error('RedisPersistence.apply before acquire');
    await this.redis.config('SET', 'appendfsync', tier.redis.appendfsync);
    await this.redis.config('SET', 'appendonly', tier.redis.appendonly);
    // Turning AOF on starts a rewrite of the whole dataset; measure only once it is done.
    for (;;) {
      const p = await redisInfo(this.redis, 'persistence');
      const ready =
        p['aof_enabled'] === (tier.redis.appendonly === 'yes' ? '1' : '0') &&
        p['aof_rewrite_in_progress'] === '0' &&
        p['aof_rewrite_scheduled'] === '0';
      if (ready) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Put Redis back and release the marker. Safe to call more than once. */
  async restore(): Promise<void> {
    if (this.marker === null) return;
    await this.undo(this.marker);
    this.marker = null;
  }

  private async undo(marker: RunMarker): Promise<void> {
    await this.redis.config('SET', 'appendonly', 'no');
    await this.redis.config('SET', 'appendfsync', 'everysec');
    if (!marker.aofDirExisted && marker.aofDir !== null) await rm(marker.aofDir, { recursive: true, force: true });
    await this.redis.del(MARKER);
  }
}

function packageVersion(name: string): string {
  return installedPackage(name)?.version ?? 'not installed';
}

/** A peer's version as the run chose it, e.g. `12.38.0 (pg-boss-12: engines.node >=22.12.0)`. */
function releaseVersion(release: InstalledPackage): string {
  return `${release.version} (${release.installedAs}: engines.node ${release.engines ?? 'unstated'})`;
}

function run(command: string, args: readonly string[]): string {
  try {
    return execFileSync(command, args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '?';
  }
}

export interface Description {
  readonly machine: Record<string, string>;
  readonly versions: Record<string, string>;
  readonly servers: Record<string, string>;
}

/**
 * The machine, the versions and the servers of this run. `releases`: the
 * peers with more than one release installed, as the run chose them.
 */
export async function describe(
  redis: Redis,
  tmpRoot: string,
  releases: Readonly<Record<string, InstalledPackage>>,
): Promise<Description> {
  const cpus = os.cpus();
  const telha = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const commit = run('git', ['rev-parse', '--short', 'HEAD']);
  const dirty = commit !== '?' && run('git', ['status', '--porcelain', '--', 'src']) !== '';
  // A run from an exported tree (no .git) can say where its source came from.
  const source = process.env['BENCH_PEERS_SOURCE'] ?? (commit === '?' ? 'not a git checkout' : `git ${commit}`);
  const df = run('df', ['-h', tmpRoot]).split('\n').slice(-1)[0] ?? '?';
  const info = await redisInfo(redis, 'server');
  const pgVersion = await withPg(PG_URL, async (client) => {
    const { rows } = await client.query<{ version: string }>('SELECT version()');
    return rows[0]?.version ?? '?';
  });
  const pg = await pgSettings(PG_URL, [
    'synchronous_commit',
    'fsync',
    'wal_sync_method',
    'shared_buffers',
    'max_connections',
  ]);
  const asyncPg = await pgSettings(TIERS.process.pgUrl, ['synchronous_commit']);
  return {
    machine: {
      cpus: `${cpus.length} x ${cpus[0]?.model.trim() ?? '?'}`,
      memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
      node: `${process.version} (${process.platform}/${process.arch})`,
      'temp dir': tmpRoot,
      'df -h (temp dir)': df,
      'load average at start': os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' / '),
    },
    versions: {
      telha: `${telha.version} (${source}${dirty ? ', src/ has uncommitted changes' : ''})`,
      bullmq: packageVersion('bullmq'),
      ioredis: packageVersion('ioredis'),
      ...Object.fromEntries(Object.entries(releases).map(([name, release]) => [name, releaseVersion(release)])),
      pg: packageVersion('pg'),
      '@grpc/grpc-js': packageVersion('@grpc/grpc-js'),
      '@nxtedition/rocksdb': packageVersion('@nxtedition/rocksdb'),
    },
    servers: {
      redis: `${info['redis_version'] ?? '?'} (${redisAddress(redis)})`,
      postgresql: pgVersion,
      'postgresql settings': Object.entries(pg)
        .map(([k, v]) => `${k}=${v}`)
        .join(', '),
      'postgresql, process tier connections': `synchronous_commit=${asyncPg['synchronous_commit'] ?? '?'} (checked through the tier's URL)`,
    },
  };
}

function redisAddress(redis: Redis): string {
  return `${redis.options.host ?? '?'}:${redis.options.port ?? '?'}`;
}
