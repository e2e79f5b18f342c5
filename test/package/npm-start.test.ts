/**
 * `npm start`, the README's second command, runs the server users run: the compiled package,
 * brought up to date first (`prestart`), not the sources through tsx. It must listen and take jobs.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { JobState, TelhaClient, tenantScope } from '../../src/client/index.ts';
import { tempDir } from '../support/backends.ts';
import { listenAddress } from '../support/server.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('npm start', () => {
  it('compiles what changed, then serves from dist/', { timeout: 120_000 }, async () => {
    const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    assert.equal(scripts['start'], 'node dist/cli/main.js serve');
    assert.match(scripts['prestart'] ?? '', /^npm run compile\b/);

    // A checkout of its own: prestart compiles into dist/ in place, and other test files running
    // beside this one execute and pack the dist/ of this checkout. Its dist/ (with the incremental
    // build's state, when there is one) comes along, so prestart has as much to compile as here.
    const checkout = tempDir('telha-npm-start-checkout-');
    for (const path of ['src', 'scripts', 'dist', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
      if (existsSync(join(ROOT, path))) cpSync(join(ROOT, path), join(checkout, path), { recursive: true });
    }
    symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'));
    const storage = tempDir('telha-npm-start-');
    // Its own process group, so the server npm starts goes with it.
    const npm = spawn('npm', ['start'], {
      cwd: checkout,
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        TELHA_STORAGE__PATH: storage,
        TELHA_SERVER__ADDRESS: '127.0.0.1:0',
        TELHA_SERVER__HTTP_ADDRESS: '',
        TELHA_LOG_LEVEL: 'warn',
      },
    });
    // The server writes to the same stdout pipe as npm: it closes once every process of the group
    // has exited, npm (which does not wait for its child on SIGTERM) and the server alike.
    const gone = once(npm.stdout, 'close');
    const listening = listenAddress(npm.stdout);
    let client: TelhaClient | null = null;
    try {
      const address = await listening;
      assert.ok(address !== null, 'npm start printed the address it listens on');
      assert.ok(existsSync(join(checkout, 'dist/.tsbuildinfo')), 'prestart compiled incrementally');

      client = new TelhaClient({ address });
      const { job } = await client.enqueue({ kind: 'npm-start' }, tenantScope('acme'));
      assert.equal((await client.show(job.jobId)).state, JobState.Pending);
    } finally {
      client?.close();
      if (npm.pid !== undefined) process.kill(-npm.pid, 'SIGTERM');
      await gone;
      rmSync(storage, { recursive: true, force: true });
      rmSync(checkout, { recursive: true, force: true });
    }
  });
});
