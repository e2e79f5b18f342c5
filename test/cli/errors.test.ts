/**
 * What the CLI says when it cannot do its job for a reason outside it: no server at the
 * address, a port already taken, a store another process holds. Each names the address or
 * the directory and says what to do, instead of a raw library error.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { tempDir } from '../support/backends.ts';
import { builtCli, freePort, spawnServer, startTestServer } from '../support/server.ts';

const exec = promisify(execFile);

async function telha(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await exec(process.execPath, [builtCli(), ...args], {
      env: { ...process.env, TELHA_LOG_LEVEL: 'silent', ...env },
    });
    return { code: 0, stderr };
  } catch (error) {
    const e = error as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

const hint = (address: string): string =>
  `error: unavailable: cannot reach a Telha server at ${address}: start one with \`telha serve\` (or \`npm start\`), or point TELHA_ADDRESS / --address at one`;

const inUse = (port: number): string =>
  `error: failed_precondition: cannot listen on 127.0.0.1:${port}: the port is in use (another telha serve?)\n`;

/** Runs `telha` with the arguments `args` makes from a port another socket holds and a fresh store directory. */
async function serveBeside(
  args: (taken: string, dir: string) => string[],
  env: Record<string, string> = {},
): Promise<{ port: number; code: number; stderr: string }> {
  const taken = createServer();
  await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
  const { port } = taken.address() as { port: number };
  const dir = tempDir();
  try {
    return { port, ...(await telha(args(`127.0.0.1:${port}`, dir), env)) };
  } finally {
    await new Promise((done) => taken.close(done));
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('CLI errors', () => {
  it('tells how to start a server when none answers at --address', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const { code, stderr } = await telha(['--address', address, 'jobs', 'counts']);
    assert.equal(code, 1);
    assert.ok(stderr.startsWith(hint(address)), stderr);
  });

  it('names the address from TELHA_ADDRESS when that is where it looked', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const { code, stderr } = await telha(['jobs', 'list'], { TELHA_ADDRESS: address });
    assert.equal(code, 1);
    assert.ok(stderr.startsWith(hint(address)), stderr);
  });

  it('says the server does not speak TLS when --tls meets a plaintext one, with no Node warning', async () => {
    const server = await startTestServer();
    try {
      const { code, stderr } = await telha(['--tls', '--address', server.address, 'jobs', 'counts']);
      assert.equal(code, 1);
      assert.equal(
        stderr,
        `error: unavailable: the server at ${server.address} does not speak TLS: drop --tls, or give it server.tls_cert_file and server.tls_key_file\n`,
      );
    } finally {
      await server.close();
    }
  });

  it('says which port is in use when serve cannot listen, in one line of its own', async () => {
    const { port, code, stderr } = await serveBeside((taken, dir) => ['serve', '--data', dir, '--listen', taken], {
      TELHA_SERVER__HTTP_ADDRESS: '',
    });
    assert.equal(code, 1);
    assert.equal(stderr, inUse(port));
  });

  it('says which dashboard port is in use when serve cannot listen on --http', async () => {
    const free = `127.0.0.1:${await freePort()}`;
    const { port, code, stderr } = await serveBeside((taken, dir) => [
      'serve',
      '--data',
      dir,
      '--listen',
      free,
      '--http',
      taken,
    ]);
    assert.equal(code, 1);
    assert.equal(stderr, inUse(port));
  });

  it('says which store is open in another process when serve cannot open it', async () => {
    const dir = tempDir();
    const holder = await spawnServer(dir, await freePort());
    try {
      const { code, stderr } = await telha(['serve', '--data', dir, '--listen', `127.0.0.1:${await freePort()}`]);
      assert.equal(code, 1);
      assert.ok(
        stderr.includes(`error: failed_precondition: the store at ${resolve(dir)} is open in another process`),
        stderr,
      );
    } finally {
      holder.child.kill('SIGTERM');
      await holder.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
