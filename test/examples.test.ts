import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  it('runs the in-process engine tour', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', `${examples}engine-demo.ts`]);
    assert.match(stdout, /stale worker rejected: lease conflict/);
    assert.match(stdout, /completed\s+email\s+901/);
    assert.match(stdout, /dead\s+report\s+100/);
  });

  it('runs npm run demo: failures into Dead, a killed worker reaped, a summary', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', `${examples}demo.ts`], {
      env: { ...process.env, DEMO_JOBS: '500' },
    });
    assert.match(stdout, /^enqueued 501 jobs$/m);
    assert.match(stdout, /killed with SIGKILL/);
    assert.match(stdout, /^ {2}completed {3}491$/m);
    assert.match(stdout, /^ {2}dead {8}10 \(failed all 3 attempts\)$/m);
    assert.match(stdout, /^ {2}reaped {6}1 /m);
    assert.match(stdout, /^ {2}throughput {2}\d+ jobs\/s/m);
    assert.match(stdout, /reaped {4}worker=doomed-\d+ generation=1/);
  });

  it('runs the dashboard demo and takes its screenshots with Chromium', async () => {
    const shots = mkdtempSync(join(tmpdir(), 'telha-shots-'));
    try {
      const { stdout } = await run(
        process.execPath,
        ['--import', 'tsx', `${examples}dashboard-demo.ts`, '--screenshots', shots],
        { env: { ...process.env, DEMO_SECONDS: '3' } },
      );
      assert.match(stdout, /^dashboard on http:\/\/127\.0\.0\.1:\d+\//m);
      assert.match(stdout, /the long-lived job is http:\/\/\S+\/jobs\/[0-9a-f-]{36}$/m);
      for (const file of ['dashboard-overview.png', 'dashboard-job.png']) {
        assert.ok(statSync(join(shots, file)).size > 10_000, `${file} holds a picture`);
      }
    } finally {
      rmSync(shots, { recursive: true, force: true });
    }
  });

  it('covers every file in examples/', () => {
    assert.deepEqual(readdirSync(examples).sort(), [
      'dashboard-demo.ts',
      'demo-doomed-worker.ts',
      'demo.ts',
      'engine-demo.ts',
      'quickstart.ts',
    ]);
  });
});
