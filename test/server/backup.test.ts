/**
 * Online backup and restore with real processes: a `telha serve` under a live drain backed up
 * three times by `telha backup` processes, each backup restored by `telha restore` and served
 * again; and a backup SIGKILLed mid-copy, which leaves nothing restore accepts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, rmSync, watch } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { makeConfig } from '../../src/core/config.ts';
import { openQueue } from '../../src/open.ts';
import { tempDir } from '../support/backends.ts';
import { allJobs, builtCli, freePort, spawnServer, type ServerProcess } from '../support/server.ts';

const acme = tenantScope('acme');

/** `telha ...args` as a child process: its exit code and output. */
function telha(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [builtCli(), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

async function stop(server: ServerProcess): Promise<void> {
  server.child.kill('SIGTERM');
  await server.exited;
}

/** How far along a job is in the drain's one road (enqueued, leased, completed). */
const STEP: Partial<Record<JobState, number>> = {
  [JobState.Pending]: 0,
  [JobState.Leased]: 1,
  [JobState.Completed]: 2,
};

describe('online backup', () => {
  it('backs up a store under a live drain three times; each restore serves every job acknowledged before its backup began', async () => {
    const dir = tempDir('telha-backup-live-');
    const server = await spawnServer(join(dir, 'store'), await freePort());
    const client = new TelhaClient({ address: server.address });
    /** Every job as its last acknowledged answer showed it. */
    const acked = new Map<string, JobRecord>();
    let draining = true;
    const producer = (async () => {
      for (let n = 0; draining; n++) {
        const jobs = Array.from({ length: 20 }, (_, i) => ({ kind: 'drain', payload: `${n}.${i}` }));
        for (const { job } of await client.enqueueBatch(jobs, acme)) acked.set(job.jobId, job);
      }
    })();
    const worker = (async () => {
      while (draining) {
        for (const job of await client.lease({ workerId: 'drainer', kinds: ['drain'], limit: 10 })) {
          acked.set(job.jobId, job);
          const { job: done } = await client.complete(job.jobId, {
            workerId: 'drainer',
            leaseGeneration: job.leaseGeneration,
          });
          acked.set(done.jobId, done);
        }
      }
    })();
    const backups: { path: string; before: Map<string, JobRecord> }[] = [];
    try {
      for (let i = 1; i <= 3; i++) {
        // Let the drain move between backups: wait for a few hundred more acknowledgements.
        const target = acked.size + 300;
        while (acked.size < target) await new Promise((resolve) => setImmediate(resolve));
        const path = join(dir, `backup-${i}`);
        const before = new Map(acked);
        const run = await telha('--address', server.address, 'backup', path);
        assert.equal(run.code, 0, run.stderr);
        assert.match(run.stdout, /^backed up \d+ jobs/);
        backups.push({ path, before });
      }
    } finally {
      draining = false;
      await Promise.all([producer, worker]);
      client.close();
      await stop(server);
    }

    for (const [i, { path, before }] of backups.entries()) {
      const storeDir = join(dir, `restored-${i}`);
      const run = await telha('restore', path, storeDir);
      assert.equal(run.code, 0, run.stderr);
      const restored = await spawnServer(storeDir, await freePort());
      const reader = new TelhaClient({ address: restored.address });
      try {
        const jobs = new Map((await allJobs(reader, acme)).map((job) => [job.jobId, job]));
        for (const [jobId, then] of before) {
          const now = jobs.get(jobId);
          assert.ok(now !== undefined, `backup ${i + 1} lacks job ${jobId}, acknowledged before it began`);
          assert.ok((STEP[now.state] ?? -1) >= (STEP[then.state] ?? 0), `job ${jobId} went back`);
          assert.ok(now.leaseGeneration >= then.leaseGeneration);
          if (now.state === then.state) assert.equal(now.leaseGeneration, then.leaseGeneration);
          assert.deepEqual(now.events.slice(0, then.events.length), then.events, `job ${jobId}'s audit trail`);
        }
        // Never half a write: the counters, written in the same batches as the rows, agree with them.
        const byState = new Map<JobState, number>();
        for (const job of jobs.values()) byState.set(job.state, (byState.get(job.state) ?? 0) + 1);
        const counted = new Map<JobState, number>();
        for (const row of await reader.counts(acme)) counted.set(row.state, (counted.get(row.state) ?? 0) + row.count);
        assert.deepEqual(counted, byState);
      } finally {
        reader.close();
        await stop(restored);
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves nothing restore accepts when a backup is SIGKILLed mid-copy, and refuses a non-empty target', async () => {
    const dir = tempDir('telha-backup-kill-');
    const store = join(dir, 'store');
    const queue = await openQueue({ config: makeConfig({ storage: { path: store } }), services: false });
    for (let n = 0; n < 40; n++) {
      await queue.enqueueBatch(
        Array.from({ length: 1_000 }, (_, i) => ({ kind: 'k', payload: `${n}.${i}` })),
        acme,
      );
    }
    await queue.close();
    const target = join(dir, 'backup');
    // The copy's directory appears as the copy begins; the kill lands while it is being filled.
    const started = new Promise<void>((resolve) => {
      const watcher = watch(dir, (_event, name) => {
        if (name === 'backup.partial') {
          watcher.close();
          resolve();
        }
      });
    });
    const child = spawn(process.execPath, [builtCli(), 'backup', target, '--data', store], {
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await started;
    child.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL');
    assert.equal(existsSync(target), false, 'a backup cut short is never at its own name');
    for (const left of [target, `${target}.partial`]) {
      const run = await telha('restore', left, join(dir, 'restored'));
      assert.equal(run.code, 1);
      assert.match(run.stderr, /is not a complete Telha backup/);
    }
    assert.equal(existsSync(join(dir, 'restored')), false);

    // A backup again to the same place replaces what the killed one left, and restores.
    const again = await telha('backup', target, '--data', store);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /backed up 40000 jobs/);
    const restored = await telha('restore', target, join(dir, 'restored'));
    assert.equal(restored.code, 0, restored.stderr);
    const refused = await telha('restore', target, join(dir, 'restored'));
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /is not empty/);
    const reopened = await openQueue({
      config: makeConfig({ storage: { path: join(dir, 'restored') } }),
      services: false,
    });
    assert.deepEqual(
      (await reopened.counts(acme)).map((row) => row.count),
      [40_000],
    );
    await reopened.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
