/**
 * `prepare` (run by `npm ci`, `npm pack` and the first `npx telha`) never deletes a build in
 * use: it leaves an up-to-date `dist/` alone, and swaps a new build in whole.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { tempDir } from '../support/backends.ts';

const exec = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

describe('prepare', () => {
  let checkout: string;

  before(() => {
    // A checkout of its own: the build under test must not touch the dist/ other tests use.
    checkout = tempDir('telha-checkout-');
    for (const path of ['src', 'scripts', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
      cpSync(join(root, path), join(checkout, path), { recursive: true });
    }
    symlinkSync(join(root, 'node_modules'), join(checkout, 'node_modules'));
  });
  after(() => rmSync(checkout, { recursive: true, force: true }));

  const prepare = () => exec('npm', ['run', 'prepare', '--silent'], { cwd: checkout });
  const dist = (...path: string[]) => join(checkout, 'dist', ...path);

  it('leaves a build newer than every source as it is', async () => {
    mkdirSync(dist('cli'), { recursive: true });
    writeFileSync(dist('cli', 'main.js'), '// the build a running server uses\n');
    writeFileSync(dist('.built'), '');
    await prepare();
    assert.equal(readFileSync(dist('cli', 'main.js'), 'utf8'), '// the build a running server uses\n');
  });

  it('replaces an outdated build with a whole new one, leaving no temporary folder', async () => {
    const past = new Date(Date.now() - 60_000);
    utimesSync(dist('.built'), past, past);
    await prepare();
    assert.ok(existsSync(dist('http', 'assets', 'app.js')));
    assert.ok(existsSync(dist('client', 'index.js')));
    assert.deepEqual(
      readdirSync(checkout).filter((name) => name.startsWith('dist')),
      ['dist'],
    );
    await exec(process.execPath, [dist('cli', 'main.js'), '--version']);
  });
});
