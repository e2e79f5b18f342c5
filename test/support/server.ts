/** Live servers for tests: in-process on a real socket, or a real `telha serve` child process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before, beforeEach } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { OffsetClock } from '../../src/core/clock.ts';
import { makeConfig, type ConfigInput } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/logger.ts';
import type { JobRecord, QueueScope } from '../../src/core/types.ts';
import { openQueue } from '../../src/open.ts';
import type { Queue } from '../../src/engine/queue.ts';
import { startServer } from '../../src/serve/server.ts';
import { build, upToDate } from '../../scripts/build.ts';
import { tempDir } from './backends.ts';

let built: string | null = null;

/**
 * `dist/cli/main.js`, the compiled CLI that `npx telha` and `npm start` run, built first if `src/`
 * changed since (in `npm test` the `api` step has just built it). Tests start `telha` processes
 * from it rather than from the sources through tsx, which transpiles the CLI's imports again in
 * every process (bench/RESULTS.md, "Test suite time").
 */
export function builtCli(): string {
  if (built === null) {
    if (!upToDate()) build();
    built = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
  }
  return built;
}

export interface TestServer {
  readonly address: string;
  /** `http://host:port` of the HTTP listener (dashboard, metrics, probes). */
  readonly http: string;
  readonly queue: Queue;
  /** The server's clock: real time, which a test may move ahead. */
  readonly clock: OffsetClock;
  readonly dir: string;
  close(): Promise<void>;
}

/** A real server on 127.0.0.1 (a free port) over a fresh RocksDB store, in this process. */
export async function startTestServer(
  values: ConfigInput = {},
  options: {
    services?: boolean;
    /** The store's directory, kept at close (a restart opens it again); default a fresh one, removed at close. */
    dir?: string;
  } = {},
): Promise<TestServer> {
  const dir = options.dir ?? tempDir('telha-server-');
  const { jobs, server, retention, metrics, schedules, watch, storage } = values as {
    storage?: object;
    watch?: object;
    jobs?: object;
    server?: object;
    retention?: object;
    metrics?: object;
    schedules?: object;
  };
  const config = makeConfig({
    storage: { path: dir, ...(storage ?? {}) },
    jobs: { ...(jobs ?? {}) },
    retention: { enabled: false, ...(retention ?? {}) },
    metrics: { ...(metrics ?? {}) },
    schedules: { ...(schedules ?? {}) },
    watch: { ...(watch ?? {}) },
    server: { address: '127.0.0.1:0', http_address: '127.0.0.1:0', shutdown_grace_ms: 1_000, ...(server ?? {}) },
  });
  const clock = new OffsetClock();
  const queue = await openQueue({ config, clock, services: options.services ?? false });
  const running = await startServer({ queue, config, logger: silentLogger });
  return {
    address: running.address,
    http: running.http === null ? '' : `http://${running.http.address}`,
    queue,
    clock,
    dir,
    async close() {
      await running.close();
      await queue.close();
      if (options.dir === undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A live server and a client of it, as the tests of one `describe` (or one test) read them. */
export interface LiveServer {
  readonly server: TestServer;
  readonly client: TelhaClient;
}

/**
 * A live server (see {@link startTestServer}) and a client of it, for the tests of one `describe`:
 * started before them and closed after. Both may be destructured where the `describe` is written
 * (`const { server, client } = liveServer()`) and read inside its tests.
 */
export function liveServer(values: ConfigInput = {}): LiveServer {
  return liveFor(before, after, values);
}

/**
 * Like {@link liveServer}, but a fresh server and client for each test of the `describe`, for
 * tests that must each begin on an empty store.
 */
export function liveServerPerTest(values: ConfigInput = {}): LiveServer {
  return liveFor(beforeEach, afterEach, values);
}

function liveFor(start: typeof before, stop: typeof after, values: ConfigInput): LiveServer {
  let live: { server: TestServer; client: TelhaClient } | null = null;
  start(async () => {
    const server = await startTestServer(values);
    live = { server, client: new TelhaClient({ address: server.address }) };
  });
  stop(async () => {
    live?.client.close();
    await live?.server.close();
    live = null;
  });
  const started = (): { server: TestServer; client: TelhaClient } => {
    if (live === null) throw new Error('the live server is read outside the tests of the describe that starts it');
    return live;
  };
  return { server: lateBound(() => started().server), client: lateBound(() => started().client) };
}

/**
 * A stand-in for the object `current()` returns when it is read, so a fixture declared where a
 * `describe` is written can be used in its tests although `before` makes the object later. Methods
 * are bound to the real object, whose private fields a proxy could not reach.
 */
function lateBound<T extends object>(current: () => T): T {
  return new Proxy({} as T, {
    get(_target, key) {
      const target = current();
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * Start servers inside tests, each with that test's settings, and have every one closed after its
 * test: `const startServer = serversClosedAfterEach()`, then `await startServer({ ... })` in a test.
 * A test may close one itself (to start another); closing again is then a no-op.
 */
export function serversClosedAfterEach(): (
  values?: ConfigInput,
  options?: { services?: boolean },
) => Promise<TestServer> {
  const running: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((server) => server.close()));
  });
  return async (values = {}, options = {}) => {
    const started = await startTestServer(values, options);
    let closing: Promise<void> | null = null;
    const server: TestServer = { ...started, close: () => (closing ??= started.close()) };
    running.push(server);
    return server;
  };
}

/** A server that a test restarts: the same address and store each time. */
export interface RestartableServer {
  readonly address: string;
  /** The server running now; throws while none is. */
  readonly current: TestServer;
  /** Close the server and start it again, on the same address over the same store. */
  restart(): Promise<TestServer>;
  /** Close it, and remove its store. */
  close(): Promise<void>;
}

/** A live server (see {@link startTestServer}) on a fixed free address over a kept store, to restart. */
export async function restartableServer(values: ConfigInput & { server?: object } = {}): Promise<RestartableServer> {
  const address = `127.0.0.1:${await freePort()}`;
  const dir = tempDir('telha-restart-');
  const start = (): Promise<TestServer> =>
    startTestServer({ ...values, server: { ...(values.server ?? {}), address } }, { dir });
  let running: TestServer | null = await start();
  return {
    address,
    get current() {
      if (running === null) throw new Error('the server is not running');
      return running;
    },
    async restart() {
      await running?.close();
      running = null;
      running = await start();
      return running;
    },
    async close() {
      await running?.close();
      running = null;
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
  const child = spawn(process.execPath, [builtCli(), 'serve', '--data', dir, '--listen', `127.0.0.1:${port}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // HTTP on a free port: tests run beside other servers on this machine, and 7071 may be taken.
    env: { ...process.env, TELHA_LOG_LEVEL: 'warn', TELHA_SERVER__HTTP_ADDRESS: '127.0.0.1:0', ...env },
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(signal ?? code)),
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const address = await listenAddress(child.stdout as NodeJS.ReadableStream);
  if (address === null) throw new Error(`telha serve exited (${String(await exited)}) before listening: ${stderr}`);
  return { address, child, exited };
}

/** The address `telha serve` prints on `stdout` once it listens; `null` if the stream ends first. */
export function listenAddress(stdout: NodeJS.ReadableStream): Promise<string | null> {
  const lines = createInterface({ input: stdout });
  return new Promise((resolve) => {
    lines.on('line', (line) => {
      const match = /^telha listening on (\S+)$/.exec(line);
      if (match?.[1]) resolve(match[1]);
    });
    lines.once('close', () => resolve(null));
  });
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

/** Every job in `scope`, read through `client` page by page. */
export async function allJobs(client: TelhaClient, scope: QueueScope): Promise<JobRecord[]> {
  const all: JobRecord[] = [];
  let pageToken: string | undefined;
  do {
    const page = await client.list({ scope, limit: 1_000, ...(pageToken ? { pageToken } : {}) });
    all.push(...page.jobs);
    pageToken = page.nextPageToken ?? undefined;
  } while (pageToken);
  return all;
}
