/**
 * Real processes, real kills: a worker SIGKILLed mid-job, and the server
 * SIGKILLed under load and restarted on the same store.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { TelhaClient } from '../../src/client/client.ts';
import { Worker } from '../../src/client/worker.ts';
import { LeaseConflictError } from '../../src/core/errors.ts';
import { JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { tempDir } from '../support/backends.ts';
import { allJobs, eventually, freePort, spawnServer, startTestServer } from '../support/server.ts';

const acme = tenantScope('acme');
const WORKER_CHILD = fileURLToPath(new URL('../support/worker-child.ts', import.meta.url));

describe('crashes', () => {
  it('reaps the lease of a SIGKILLed worker, lets another complete the job, and rejects the late submission', async () => {
    const server = await startTestServer(
      { jobs: { lease_ttl_secs: 1, reaper_interval_secs: 1, backoff_base_secs: 0 } },
      { services: true },
    );
    const client = new TelhaClient({ address: server.address });
    try {
      const { job } = await client.enqueue({ kind: 'fragile' }, acme);
      const child = spawn(process.execPath, ['--import', 'tsx', WORKER_CHILD, server.address, 'fragile'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
      let victim: { jobId: string; generation: number; workerId: string } | null = null;
      for await (const line of createInterface({ input: child.stdout })) {
        const [word, jobId, generation, workerId] = line.split(' ');
        if (word === 'started' && jobId && generation && workerId) {
          victim = { jobId, generation: Number(generation), workerId };
          child.kill('SIGKILL');
        }
      }
      assert.equal(await exited, 'SIGKILL');
      assert.ok(victim);
      assert.equal(victim.jobId, job.jobId);

      // Another worker gets the job once the reaper has reclaimed the dead worker's lease.
      let completedBy: JobRecord | null = null;
      const done = new Promise<void>((resolve) => {
        const survivor = new Worker({
          address: server.address,
          kinds: ['fragile'],
          workerId: 'survivor',
          handler: async () => {},
          onCompleted: (record) => {
            completedBy = record;
            void survivor.close().then(resolve);
          },
        }).start();
      });
      await done;
      assert.ok(completedBy);
      assert.equal((completedBy as JobRecord).leaseGeneration, victim.generation + 1);

      // The dead worker's submissions, replayed with its stale fence, are all refused.
      const stale = { workerId: victim.workerId, leaseGeneration: victim.generation };
      for (const submit of [
        () => client.complete(victim.jobId, stale),
        () => client.fail(victim.jobId, stale, { error: 'late' }),
        () => client.heartbeat(victim.jobId, stale),
        () => client.checkpoint(victim.jobId, stale, Buffer.from('late')),
      ]) {
        await assert.rejects(submit(), (error: unknown) => error instanceof LeaseConflictError);
      }
      const record = await client.show(job.jobId);
      assert.equal(record.state, JobState.Completed);
      assert.deepEqual(
        record.events.map((e) => e.transition),
        ['enqueued', 'leased', 'reaped', 'leased', 'completed'],
      );
    } finally {
      await server.close();
    }
  });

  it('survives the server being SIGKILLed under load: workers reconnect, every acknowledged job completes exactly once', async () => {
    const dir = tempDir('telha-crash-');
    const port = await freePort();
    const env = {
      TELHA_JOBS__LEASE_TTL_SECS: '2',
      TELHA_JOBS__REAPER_INTERVAL_SECS: '1',
      TELHA_JOBS__BACKOFF_BASE_SECS: '0',
      TELHA_RETENTION__ENABLED: 'false',
    };
    let server = await spawnServer(dir, port, env);
    const client = new TelhaClient({ address: server.address, timeoutMs: 5_000 });
    const acknowledged = new Set<string>();
    const workers: Worker[] = [];
    try {
      for (const { job } of await client.enqueueBatch(
        Array.from({ length: 400 }, (_, i) => ({ kind: 'load', payload: `job ${i}` })),
        acme,
      )) {
        acknowledged.add(job.jobId);
      }
      const runs = new Map<string, number>();
      let completions = 0;
      let reachedKillPoint!: () => void;
      const killPoint = new Promise<void>((resolve) => (reachedKillPoint = resolve));
      for (let w = 0; w < 3; w++) {
        workers.push(
          new Worker({
            address: server.address,
            kinds: ['load'],
            concurrency: 10,
            timeoutMs: 2_000,
            workerId: `w${w}`,
            handler: async (job) => {
              runs.set(job.jobId, (runs.get(job.jobId) ?? 0) + 1);
              // Work that takes a little time, so jobs are mid-handler when the server dies (not a wait).
              await new Promise((resolve) => setTimeout(resolve, 2));
            },
            onCompleted: () => {
              if (++completions === 150) reachedKillPoint();
            },
          }).start(),
        );
      }
      // A producer keeps enqueueing through the crash; only what the server acknowledged counts.
      let producing = true;
      let restarted = false;
      let ackedAfterRestart!: () => void;
      const producedAfterRestart = new Promise<void>((resolve) => (ackedAfterRestart = resolve));
      const producer = (async () => {
        for (let i = 0; producing; i++) {
          try {
            const { job } = await client.enqueue({ kind: 'load', payload: `late ${i}` }, acme);
            acknowledged.add(job.jobId);
            if (restarted) ackedAfterRestart();
          } catch {
            // The server is down (another process, which tells this one nothing): try again shortly.
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
      })();

      await killPoint;
      server.child.kill('SIGKILL');
      assert.equal(await server.exited, 'SIGKILL');
      server = await spawnServer(dir, port, env);
      restarted = true;
      await producedAfterRestart;
      producing = false;
      await producer;

      const settled = async (): Promise<boolean> => {
        const counts = await client.counts();
        return !counts.some((r) => r.state === JobState.Pending || r.state === JobState.Leased);
      };
      // The restarted server is another process: its reaper hands back the leases the crash left, and
      // only its counts say when every job is done (handlers may run again, so completions do not).
      await eventually(settled, 'every job to complete after the restart', 90_000);

      const all = await allJobs(client, acme);
      const byId = new Map(all.map((j) => [j.jobId, j]));
      for (const id of acknowledged) {
        const job = byId.get(id);
        assert.ok(job, `acknowledged job ${id} was lost`);
        assert.equal(job.state, JobState.Completed);
      }
      for (const job of all) {
        assert.equal(
          job.events.filter((e) => e.transition === 'completed').length,
          1,
          `job ${job.jobId} completed more than once`,
        );
      }
      assert.ok(acknowledged.size > 400);
    } finally {
      await Promise.all(workers.map((w) => w.close(5_000)));
      server.child.kill('SIGTERM');
      await server.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
