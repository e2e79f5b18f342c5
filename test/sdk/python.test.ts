/**
 * The Python SDK's own suite (sdk/python/tests: pytest against a real `telha serve`), run by
 * `npm test` on Debian's interpreter: this test passes only if every Python test does, and
 * prints pytest's report when one does not.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PYTHON } from '../support/python.ts';
import { builtCli } from '../support/server.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function pytest(): Promise<{ code: number | null; output: string }> {
  const child = spawn(PYTHON, ['-m', 'pytest', 'sdk/python/tests', '-q', '-p', 'no:cacheprovider'], {
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
  it('passes its pytest suite against a real telha serve', async () => {
    const { code, output } = await pytest();
    assert.equal(code, 0, `pytest failed:\n${output}`);
    assert.match(output, /\d+ passed/);
  });
});
