/**
 * A client or worker pointed where no server answers says so: the Worker once through its
 * `onError` hook and its logger (not once per retry) and once more when it reconnects, and
 * both can wait for the server to be ready, failing after a timeout with the address named.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { Worker } from '../../src/client/worker.ts';
import { ErrorCode, isTelhaError } from '../../src/core/errors.ts';
import type { Logger } from '../../src/core/logger.ts';
import { tenantScope } from '../../src/core/types.ts';
import { freePort, startTestServer } from '../support/server.ts';

const acme = tenantScope('acme');

interface Line {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: object;
}

/** A logger that keeps every line, and lets a test wait for a number of lines matching a pattern. */
function recordingLogger(): Logger & {
  lines: Line[];
  count(pattern: RegExp): number;
  until(pattern: RegExp, n: number): Promise<void>;
} {
  const lines: Line[] = [];
  const waiters: { pattern: RegExp; n: number; resolve: () => void }[] = [];
  const count = (pattern: RegExp): number => lines.filter((l) => pattern.test(l.message)).length;
  const log =
    (level: Line['level']) =>
    (fields: object, message: string): void => {
      lines.push({ level, message, fields });
      for (const waiter of waiters.filter((w) => count(w.pattern) >= w.n)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    };
  return {
    lines,
    count,
    until: (pattern, n) =>
      count(pattern) >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ pattern, n, resolve })),
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
  };
}

function unavailableAt(address: string): (error: unknown) => boolean {
  return (error) => {
    assert.ok(isTelhaError(error, ErrorCode.Unavailable), String(error));
    assert.ok(error.message.includes(address), error.message);
    return true;
  };
}

describe('no server at the address', () => {
  it('Worker: reports the failure once through onError and the logger, then its recovery once', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const logger = recordingLogger();
    const errors: Error[] = [];
    let completed!: () => void;
    const done = new Promise<void>((resolve) => (completed = resolve));
    const worker = new Worker({
      address,
      kinds: ['report'],
      logger,
      onError: (error) => errors.push(error),
      onCompleted: () => completed(),
      handler: async () => {},
    }).start();
    let server: Awaited<ReturnType<typeof startTestServer>> | null = null;
    try {
      // Several attempts, each failing, before a server appears.
      await logger.until(/^work session failed; retrying/, 3);
      assert.equal(errors.length, 1, 'one report for the whole outage');
      assert.ok(unavailableAt(address)(errors[0]));
      const warned = logger.lines.filter((l) => l.level === 'warn');
      assert.deepEqual(
        warned.map((l) => l.message),
        [`cannot reach the Telha server at ${address}; retrying until it answers`],
      );

      server = await startTestServer({ server: { address } });
      await worker.waitForReady({ timeoutMs: 60_000 });
      await logger.until(/^reconnected/, 1);
      assert.deepEqual(
        logger.lines.filter((l) => l.message.startsWith('reconnected')).map((l) => [l.level, l.message]),
        [['info', `reconnected to the Telha server at ${address}`]],
      );
      assert.equal(errors.length, 1, 'recovery is not an error');

      // And it works.
      const client = new TelhaClient({ address });
      await client.enqueue({ kind: 'report' }, acme);
      await done;
      client.close();
    } finally {
      await worker.close();
      await server?.close();
    }
  });

  it('Worker: says so on stderr, as a JSON line with the token redacted, when given no logger', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    // Its own process: the default logger writes to the process's stderr, which a test reads there.
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { Worker } from ${JSON.stringify(new URL('../../src/client/worker.ts', import.meta.url).href)};
         new Worker({ address: ${JSON.stringify(address)}, token: 'secret-token-1', handler: async () => {} }).start();`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TELHA_LOG_LEVEL: 'info' } },
    );
    try {
      const lines = createInterface({ input: child.stderr });
      let said: Record<string, unknown> | null = null;
      for await (const line of lines) {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        if (String(parsed['msg']).startsWith('cannot reach')) {
          said = parsed;
          break;
        }
      }
      assert.ok(said, 'the worker said nothing about the server it cannot reach');
      assert.equal(said['msg'], `cannot reach the Telha server at ${address}; retrying until it answers`);
      assert.equal(said['name'], 'telha-worker');
      assert.equal(said['level'], 40, 'a warning');
      assert.ok(!JSON.stringify(said).includes('secret-token-1'));
    } finally {
      child.kill();
    }
  });

  it('Worker.waitForReady: rejects with Unavailable naming the address when no server answers in time', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const worker = new Worker({ address, handler: async () => {}, logger: recordingLogger() }).start();
    try {
      await assert.rejects(worker.waitForReady({ timeoutMs: 300 }), unavailableAt(address));
    } finally {
      await worker.close();
    }
  });

  it('TelhaClient.waitForReady: rejects with Unavailable naming the address when no server answers in time', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const client = new TelhaClient({ address });
    try {
      await assert.rejects(client.waitForReady({ timeoutMs: 300 }), unavailableAt(address));
    } finally {
      client.close();
    }
  });

  it('TelhaClient.waitForReady: resolves once a server appears at the address', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const client = new TelhaClient({ address });
    const ready = client.waitForReady({ timeoutMs: 60_000 });
    const server = await startTestServer({ server: { address } });
    try {
      await ready;
      assert.deepEqual(await client.counts(acme), []);
    } finally {
      client.close();
      await server.close();
    }
  });
});
