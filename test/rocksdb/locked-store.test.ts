/** A RocksDB store is opened by one process at a time; a second open says so, naming the directory. */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { makeConfig } from '../../src/core/config.ts';
import { ErrorCode, isTelhaError } from '../../src/core/errors.ts';
import { openQueue } from '../../src/open.ts';
import { tempDir } from '../support/backends.ts';
import { freePort, spawnServer } from '../support/server.ts';

function openAt(dir: string): ReturnType<typeof openQueue> {
  return openQueue({
    config: makeConfig({ storage: { path: dir }, retention: { enabled: false } }),
    services: false,
  });
}

function heldBy(dir: string, holder: RegExp): (error: unknown) => boolean {
  return (error) => {
    assert.ok(isTelhaError(error, ErrorCode.FailedPrecondition), String(error));
    assert.ok(error.message.includes(`the store at ${resolve(dir)} is `), error.message);
    assert.ok(error.message.includes(join(resolve(dir), 'LOCK')), error.message);
    assert.match(error.message, holder);
    assert.match(error.message, /point storage\.path elsewhere/);
    return true;
  };
}

describe('a store already open', () => {
  it('refuses a store another process holds, naming the directory and its LOCK file', async () => {
    const dir = tempDir();
    const holder = await spawnServer(dir, await freePort());
    try {
      await assert.rejects(openAt(dir), heldBy(dir, /open in another process/));
    } finally {
      holder.child.kill('SIGTERM');
      await holder.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a store this process already holds', async () => {
    const dir = tempDir();
    const queue = await openAt(dir);
    try {
      await assert.rejects(openAt(dir), heldBy(dir, /already open in this process/));
    } finally {
      await queue.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
