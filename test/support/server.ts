/** Live servers for tests: in-process on a real socket, or a real `telha serve` child process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { OffsetClock } from '../../src/core/clock.ts';
import { makeConfig, type ConfigInput } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { openQueue } from '../../src/open.ts';
import type { Queue } from '../../src/engine/queue.ts';
import { startServer } from '../../src/server/server.ts';
import { tempDir } from './backends.ts';

export const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

export interface TestServer {
  readonly address: string;
  readonly queue: Queue;
  /** The server's clock: real time, which a test may move ahead. */
  readonly clock: OffsetClock;
  readonly dir: string;
  close(): Promise<void>;
}

/** A real server on 127.0.0.1 (a free port) over a fresh RocksDB store, in this process. */
export async function startTestServer(
  values: ConfigInput = {},
  options: { services?: boolean } = {},
): Promise<TestServer> {
  const dir = tempDir('telha-server-');
  const { jobs, server, retention } = values as { jobs?: object; server?: object; retention?: object };
  const config = makeConfig({
    storage: { path: dir },
    jobs: { ...(jobs ?? {}) },
    retention: { enabled: false, ...(retention ?? {}) },
    server: { address: '127.0.0.1:0', shutdown_grace_ms: 1_000, ...(server ?? {}) },
  });
  const clock = new OffsetClock();
  const queue = await openQueue({ config, clock, services: options.services ?? false });
  const running = await startServer({ queue, config, logger: silentLogger });
  return {
    address: running.address,
    queue,
    clock,
    dir,
    async close() {
      await running.close();
      await queue.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A port nothing listens on right now, so a restarted server can come back at the same address. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

export interface ServerProcess {
  readonly address: string;
  readonly child: ChildProcess;
  /** Resolves with the signal (or exit code) the process ended with. */
  readonly exited: Promise<NodeJS.Signals | number | null>;
}

/** `telha serve` as a child process; resolves once it prints its address. */
export async function spawnServer(dir: string, port: number, env: Record<string, string> = {}): Promise<ServerProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', CLI, 'serve', '--data', dir, '--listen', `127.0.0.1:${port}`],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TELHA_LOG_LEVEL: 'warn', ...env },
    },
  );
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(signal ?? code)),
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const address = await new Promise<string>((resolve, reject) => {
    lines.on('line', (line) => {
      const match = /^telha listening on (\S+)$/.exec(line);
      if (match?.[1]) resolve(match[1]);
    });
    void exited.then((how) => reject(new Error(`telha serve exited (${String(how)}) before listening: ${stderr}`)));
  });
  return { address, child, exited };
}

/**
 * Poll `check` until it returns true, failing after `timeoutMs`. Only for what no event in this
 * process reports: another OS process (a spawned server), or PostgreSQL's own state. Anything
 * this process does, wait on its signal (`queue.events`, a worker's hooks, the promise itself).
 */
export async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
