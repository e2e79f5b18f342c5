/** `npm test` says what is missing when PostgreSQL is, before running anything. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { postgresProblem } from '../support/preflight.ts';
import { pythonProblem } from '../support/python.ts';
import { TEST_PG_URL } from '../support/postgres-url.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('the test preflight', () => {
  it('finds the PostgreSQL the tests use', async () => {
    assert.equal(await postgresProblem(TEST_PG_URL), null);
  });

  it('says where it looked and what to do when PostgreSQL is not there, hiding a password', async () => {
    const problem = await postgresProblem('postgres://postgres:secret@127.0.0.1:1/test');
    assert.match(problem ?? '', /^PostgreSQL is not reachable at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/test \(/);
    assert.match(problem ?? '', /start it .* or set TELHA_TEST_PG_URL/);
    assert.doesNotMatch(problem ?? '', /secret/);
  });

  it("finds what the Python SDK's tests need", () => {
    assert.equal(pythonProblem(), null);
  });

  it('names the Debian packages to install when the interpreter cannot find them', () => {
    const problem = pythonProblem('/nonexistent/python3');
    assert.match(
      problem ?? '',
      /python3-grpcio, python3-protobuf, python3-pytest, python3-pytest-asyncio, python3-pydantic/,
    );
    assert.match(problem ?? '', /apt-get install -y python3-grpcio python3-protobuf /);
  });

  it('runs first in npm test, and fails the run with that message', async () => {
    const { scripts } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: { test: string } };
    assert.match(scripts.test, /^node --import tsx test\/support\/preflight\.ts && /);
    const run = promisify(execFile)(process.execPath, ['--import', 'tsx', 'test/support/preflight.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        TELHA_TEST_PG_URL: 'postgres://postgres@127.0.0.1:1/test',
        TELHA_TEST_PYTHON: '/nonexistent/python3',
      },
    });
    await assert.rejects(run, (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 1);
      assert.match(
        error.stderr,
        /^npm test: PostgreSQL is not reachable at postgres:\/\/postgres@127\.0\.0\.1:1\/test/,
      );
      assert.match(error.stderr, /\nnpm test: the Python SDK's tests need Debian packages .*python3-grpcio/);
      return true;
    });
  });
});
