/**
 * A throwaway PostgreSQL cluster of the test's own, so a test can stop and
 * restart the database server without touching the shared one on port 5432
 * that every other test (and other engineers' runs) use at the same time.
 * It runs the Debian binaries (`pg_config --bindir`, or `TELHA_TEST_PG_BIN`);
 * `initdb` refuses to run as root, so as root the cluster runs as `postgres`.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from './backends.ts';
import { freePort } from './server.ts';

const run = promisify(execFile);

function binDir(): string {
  const fromEnv = process.env['TELHA_TEST_PG_BIN'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
}

export class PgCluster {
  private constructor(
    private readonly dir: string,
    private readonly bin: string,
    private readonly asPostgres: boolean,
    readonly port: number,
  ) {}

  /** A fresh cluster on a free port of 127.0.0.1, trust auth, started. */
  static async start(): Promise<PgCluster> {
    const dir = tempDir('telha-pgcluster-');
    const asPostgres = process.getuid?.() === 0;
    if (asPostgres) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
      chownSync(dir, uid, gid);
    }
    const cluster = new PgCluster(dir, binDir(), asPostgres, await freePort());
    try {
      await cluster.pg('initdb', ['-D', cluster.data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
      await cluster.start();
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    return cluster;
  }

  private get data(): string {
    return join(this.dir, 'data');
  }

  /** The `postgres` database of this cluster, as user `postgres`. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Start the server and wait until it accepts connections. */
  async start(): Promise<void> {
    await this.pg('pg_ctl', [
      '-D',
      this.data,
      '-l',
      join(this.dir, 'log'),
      '-w',
      '-o',
      // Durability is not under test here; fsync off keeps the test quick on a shared machine.
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      'start',
    ]);
  }

  /** Stop the server the way a restart or failover does: every backend terminated, connections refused. */
  async stop(): Promise<void> {
    await this.pg('pg_ctl', ['-D', this.data, '-w', '-m', 'fast', 'stop']);
  }

  /** Stop it at once and delete everything. */
  async destroy(): Promise<void> {
    await this.pg('pg_ctl', ['-D', this.data, '-w', '-m', 'immediate', 'stop']).catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async pg(tool: string, args: string[]): Promise<void> {
    const path = join(this.bin, tool);
    await (this.asPostgres ? run('runuser', ['-u', 'postgres', '--', path, ...args]) : run(path, args));
  }
}
