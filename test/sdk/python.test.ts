/**
 * The Python SDK's own suite (sdk/python/tests: pytest against a real `telha serve`), run by
 * `npm test` on Debian's interpreter: each test here passes only if every Python test it runs
 * does, and prints pytest's report when one does not. The suite is split into a few pytest runs,
 * each a test of its own, so that no one run nears `--test-timeout` on a loaded machine.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PYTHON } from '../support/python.ts';
import { builtCli } from '../support/server.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TESTS = 'sdk/python/tests';

/** The longest files, each run on its own; every other file runs in one last run. */
const ALONE = ['test_worker.py', 'test_client.py', 'test_restarts.py', 'test_process_pool.py', 'test_postgres.py'];
const FILES = readdirSync(`${ROOT}${TESTS}`)
  .filter((name) => /^test_.*\.py$/.test(name))
  .sort();
const RUNS = [...ALONE.map((name) => [name]), FILES.filter((name) => !ALONE.includes(name))];

function pytest(files: readonly string[]): Promise<{ code: number | null; output: string }> {
  const paths = files.map((name) => `${TESTS}/${name}`);
  const child = spawn(PYTHON, ['-m', 'pytest', ...paths, '-q', '-p', 'no:cacheprovider'], {
    cwd: ROOT,
    // The servers it starts run the compiled CLI, as users do (conftest.py).
    env: { ...process.env, TELHA_TEST_CLI: builtCli() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

describe('the Python SDK', () => {
  it('names only test files that exist to run alone', () => {
    for (const name of ALONE) assert.ok(FILES.includes(name), `${TESTS}/${name} is gone: drop it from ALONE`);
  });

  for (const files of RUNS) {
    it(`passes ${files.join(', ')} against a real telha serve`, async () => {
      const { code, output } = await pytest(files);
      assert.equal(code, 0, `pytest failed:\n${output}`);
      assert.match(output, /\d+ passed/);
    });
  }
});
