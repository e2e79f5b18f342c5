/** The CLI as an operator runs it: a child process against a live server. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { TelhaClient } from '../src/client/client.ts';
import { tenantScope } from '../src/core/types.ts';
import { CLI, startTestServer, type TestServer } from './support/server.ts';

const exec = promisify(execFile);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('the telha CLI', () => {
  let server: TestServer;
  let deadId: string;

  async function telha(...args: string[]): Promise<Run> {
    try {
      const { stdout, stderr } = await exec(process.execPath, [
        '--import',
        'tsx',
        CLI,
        '--address',
        server.address,
        ...args,
      ]);
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  before(async () => {
    server = await startTestServer();
    const client = new TelhaClient({ address: server.address });
    await client.enqueue({ kind: 'report' }, tenantScope('acme'));
    await client.enqueue({ kind: 'doomed' }, tenantScope('acme'));
    const [job] = await client.lease({ workerId: 'w1', kinds: ['doomed'] });
    assert.ok(job);
    deadId = (
      await client.fail(
        job.jobId,
        { workerId: 'w1', leaseGeneration: job.leaseGeneration },
        {
          error: 'disk full',
          permanent: true,
        },
      )
    ).jobId;
  });
  after(async () => {
    await server.close();
  });

  it('enqueues a job with a JSON payload and shows its lifecycle', async () => {
    const enqueued = await telha(
      'jobs',
      'enqueue',
      '--kind',
      'email',
      '--tenant',
      'acme',
      '--payload',
      '{"to":"a@b.c"}',
      '--json',
    );
    assert.equal(enqueued.code, 0, enqueued.stderr);
    const { created, job } = JSON.parse(enqueued.stdout) as {
      created: boolean;
      job: { jobId: string; payloadText: string; state: string };
    };
    assert.equal(created, true);
    assert.equal(job.payloadText, '{"to":"a@b.c"}');
    assert.equal(job.state, 'pending');

    const shown = await telha('jobs', 'show', job.jobId);
    assert.equal(shown.code, 0);
    assert.match(shown.stdout, new RegExp(`^job\\s+${job.jobId}$`, 'm'));
    assert.match(shown.stdout, /^state\s+pending, ready to lease$/m);
    assert.match(shown.stdout, /^attempts\s+0 of 5$/m);
    assert.match(shown.stdout, /^payload\s+\{"to":"a@b\.c"\}$/m);
    assert.match(shown.stdout, /^lifecycle$/m);
    assert.match(shown.stdout, /enqueued/);
  });

  it('reads a raw payload from a file', async () => {
    const file = join(server.dir, 'payload.bin');
    writeFileSync(file, Buffer.from([0, 1, 2, 255]));
    const run = await telha('jobs', 'enqueue', '--kind', 'blob', '--tenant', 'acme', '--payload', `@${file}`, '--json');
    assert.equal(run.code, 0, run.stderr);
    const { job } = JSON.parse(run.stdout) as { job: { payload: string } };
    assert.equal(job.payload, Buffer.from([0, 1, 2, 255]).toString('base64'));
  });

  it('shows a dead job with its error and how to retry it', async () => {
    const shown = await telha('jobs', 'show', deadId);
    assert.match(shown.stdout, /^state\s+DEAD after 1 attempt: retry with `telha jobs retry/m);
    assert.match(shown.stdout, /failed\s+worker=w1 generation=1 attempt=1 permanent: disk full/);
  });

  it('lists with filters, pages, and prints JSON for scripts', async () => {
    const table = await telha('jobs', 'list', '--tenant', 'acme', '--state', 'dead');
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^JOB\s+STATE\s+KIND/m);
    assert.match(table.stdout, new RegExp(`^${deadId}\\s+dead\\s+doomed\\s+acme`, 'm'));
    const page = await telha('jobs', 'list', '--limit', '1', '--json');
    const parsed = JSON.parse(page.stdout) as { jobs: unknown[]; nextPageToken: string | null };
    assert.equal(parsed.jobs.length, 1);
    assert.ok(parsed.nextPageToken);
    const all = JSON.parse((await telha('jobs', 'list', '--limit', '1', '--all', '--json')).stdout) as {
      jobs: unknown[];
    };
    assert.ok(all.jobs.length >= 3);
    const kinds = JSON.parse((await telha('jobs', 'list', '--kind-prefix', 'rep', '--json')).stdout) as {
      jobs: { kind: string }[];
    };
    assert.deepEqual(
      kinds.jobs.map((j) => j.kind),
      ['report'],
    );
  });

  it('prints stats per state and kind', async () => {
    const stats = await telha('jobs', 'counts', '--tenant', 'acme');
    assert.match(stats.stdout, /^dead\s+doomed\s+1$/m);
    assert.match(stats.stdout, /^total: /m);
    const json = JSON.parse((await telha('jobs', 'stats', '--json')).stdout) as {
      state: string;
      kind: string;
      count: number;
    }[];
    assert.ok(json.some((r) => r.state === 'pending' && r.kind === 'report' && r.count === 1));
  });

  it('retries a dead job', async () => {
    const run = await telha('jobs', 'retry', deadId, '--json');
    assert.equal(run.code, 0, run.stderr);
    assert.equal((JSON.parse(run.stdout) as { state: string }).state, 'pending');
  });

  it("fails with exit code 1 and the server's error for a failed call", async () => {
    const run = await telha('jobs', 'show', '01890a5d-ac96-774b-bcce-b302099a8057');
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^error: not_found: job 01890a5d-ac96-774b-bcce-b302099a8057 not found$/m);
    const again = await telha('jobs', 'retry', 'nope');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /invalid_argument: job_id/);
  });

  it('fails with exit code 2 for bad usage', async () => {
    assert.equal((await telha('jobs', 'list', '--state', 'bogus')).code, 2);
    assert.equal((await telha('jobs', 'enqueue')).code, 2);
    const payload = await telha('jobs', 'enqueue', '--kind', 'k', '--tenant', 'acme', '--payload', '{not json');
    assert.equal(payload.code, 2);
    assert.match(payload.stderr, /--payload must be JSON/);
  });

  it('has --help on every command', async () => {
    for (const args of [
      [],
      ['serve'],
      ['jobs'],
      ['jobs', 'show'],
      ['jobs', 'list'],
      ['jobs', 'retry'],
      ['jobs', 'enqueue'],
      ['jobs', 'stats'],
    ]) {
      const run = await telha(...args, '--help');
      assert.equal(run.code, 0, args.join(' '));
      assert.match(run.stdout, /^Usage: telha/m);
    }
  });

  it('reports an unreachable server clearly', async () => {
    const run = await telha('--address', '127.0.0.1:1', 'jobs', 'counts');
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^error: unavailable: /m);
  });
});
