import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { freePort } from '../support/server.ts';

const run = promisify(execFile);
const examples = fileURLToPath(new URL('../../examples/', import.meta.url));

// Each example is a program of its own (its own store, ports and temporary files): they run side
// by side, most of their time spent waiting on leases, a browser or the demo's traffic.
describe('examples', { concurrency: true }, () => {
  it('runs the quickstart', async () => {
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
    // Why the end of the run waits: the killed worker's lease, from the settings that time it.
    assert.match(
      stdout,
      /^ {2}that job waits for its lease to run out \(2 s, jobs\.lease_ttl_secs\), the reaper to take it back \(every 1 s, jobs\.reaper_interval_secs\) and a backoff \(1 s\), then runs on another worker$/m,
    );
    assert.match(stdout, /^ {2}completed {3}491$/m);
    assert.match(stdout, /^ {2}dead {8}10 \(failed all 3 attempts\)$/m);
    assert.match(stdout, /^ {2}reaped {6}1 /m);
    // The rate is over the time handlers ran, which the waits for backoff and the reaped lease are not.
    const throughput =
      /^ {2}throughput {2}\d+ handler runs\/s, end to end through gRPC \((\d+) runs in the ([\d.]+) s handlers were running; ([\d.]+) s in all/m.exec(
        stdout,
      );
    assert.ok(throughput, stdout);
    // 500 first attempts, 2 more for each of 10 bouncing jobs, 1 more for each of 25 flaky ones, and
    // the fragile job's run after its reap (its first run was in the killed process).
    assert.ok(Number(throughput[1]) >= 500 + 20 + 25 + 1, throughput[0]);
    assert.ok(Number(throughput[2]) < Number(throughput[3]), 'the waits are not counted');
    // The lifecycle as the CLI prints it, by the command the demo names, while its server runs.
    const show = /^\$ telha jobs show ([0-9a-f-]{36}) --address 127\.0\.0\.1:\d+$/m.exec(stdout);
    assert.ok(show, stdout);
    assert.match(stdout, new RegExp(`^job {8}${show[1]}$`, 'm'));
    assert.match(stdout, /^state {6}completed$/m);
    assert.match(stdout, /reaped\s+worker=doomed-\d+ generation=1 attempt=1$/m);
  });

  it('runs the dashboard demo and takes its screenshots with Chromium', async () => {
    const shots = mkdtempSync(join(tmpdir(), 'telha-shots-'));
    try {
      const { stdout } = await run(
        process.execPath,
        ['--import', 'tsx', `${examples}dashboard-demo.ts`, '--screenshots', shots],
        { env: { ...process.env, DEMO_SECONDS: '3' } },
      );
      assert.match(stdout, /the long-lived job is http:\/\/\S+\/jobs\/[0-9a-f-]{36}$/m);
      for (const file of [
        'dashboard-overview.png',
        'dashboard-job.png',
        'dashboard-pauses-limits.png',
        'dashboard-limit-refused.png',
        'dashboard-schedules.png',
        'dashboard-schedule-form.png',
      ]) {
        assert.ok(statSync(join(shots, file)).size > 10_000, `${file} holds a picture`);
      }
    } finally {
      rmSync(shots, { recursive: true, force: true });
    }
  });

  it('runs the dashboard demo quietly on DEMO_HTTP_ADDRESS, its address the last line', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const demo = spawn(process.execPath, ['--import', 'tsx', `${examples}dashboard-demo.ts`], {
      env: { ...process.env, DEMO_SECONDS: '2', DEMO_HTTP_ADDRESS: address },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    demo.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const lines: string[] = [];
    for await (const line of createInterface({ input: demo.stdout })) {
      lines.push(line);
      if (line.includes('serving until Ctrl-C')) break;
    }
    const exited = new Promise((resolve) => demo.once('exit', resolve));
    demo.kill('SIGINT');
    await exited;
    assert.equal(stderr, '');
    assert.ok(lines.length <= 4, lines.join('\n'));
    assert.ok(lines.at(-1)?.startsWith(`dashboard on http://${address}/ `), lines.join('\n'));
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
