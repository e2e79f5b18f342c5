import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const examples = fileURLToPath(new URL('../examples/', import.meta.url));

describe('examples', () => {
  it('runs the quickstart from the README', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', `${examples}quickstart.ts`]);
    assert.match(stdout, /^email [0-9a-f-]{36}: enqueued → leased → extended → completed$/m);
  });

  it('runs the engine tour that npm start shows', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', `${examples}engine-demo.ts`]);
    assert.match(stdout, /stale worker rejected: lease conflict/);
    assert.match(stdout, /completed\s+email\s+901/);
    assert.match(stdout, /dead\s+report\s+100/);
  });

  it('covers every file in examples/', () => {
    assert.deepEqual(readdirSync(examples).sort(), ['engine-demo.ts', 'quickstart.ts']);
  });
});
