/**
 * CI runs the suite once per supported Node (.ci/run), each with that Node
 * first on PATH and its version in TELHA_EXPECT_NODE. This file runs in a
 * process the test runner spawned, as every test file does, so it sees the
 * Node the tests ran on; the processes tests start use process.execPath, so
 * they run on it too.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

const expected = process.env['TELHA_EXPECT_NODE'];

describe('the Node the suite runs on', () => {
  it('is the one CI asked for', { skip: expected === undefined && 'TELHA_EXPECT_NODE unset (.ci/run sets it)' }, () => {
    assert.equal(process.version, expected);
  });
});
