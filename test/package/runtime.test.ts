/**
 * CI runs the suite once per supported Node (.ci/run), each with that Node
 * first on PATH and its version in TELHA_EXPECT_NODE. This file runs in a
 * process the test runner spawned, as every test file does, so it sees the
 * Node the tests ran on; the processes tests start use process.execPath, so
 * they run on it too. Outside CI the expected Node is the `node` first on
 * PATH, the one a developer's `npm test` started with.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);

describe('the Node the suite runs on', () => {
  it('is the one CI asked for, or else the node first on PATH', async () => {
    const expected = process.env['TELHA_EXPECT_NODE'] ?? (await run('node', ['--version'])).stdout.trim();
    assert.equal(process.version, expected);
  });

  it('is the one the processes tests spawn run on', async () => {
    const { stdout } = await run(process.execPath, ['--version']);
    assert.equal(stdout.trim(), process.version);
  });
});
