/**
 * Several `telha serve` processes on one PostgreSQL database: three servers,
 * six SDK workers spread over them, 2,000 jobs, one server SIGKILLed a fifth of the way through.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { Worker } from '../../src/client/worker.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { dropTestSchema, tempDir, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { allJobs, eventually, freePort, spawnServer, type ServerProcess } from '../support/server.ts';

const acme = tenantScope('acme');
const JOBS = 2_000;

describe('several servers on one PostgreSQL store', () => {
  it('completes every job exactly once with one of three servers SIGKILLed mid-run', async () => {
    const schema = uniqueSchema('multi');
    const env = {
      TELHA_STORAGE__KIND: 'postgres',
      TELHA_STORAGE__URL: TEST_PG_URL,
      TELHA_STORAGE__SCHEMA: schema,
      TELHA_JOBS__LEASE_TTL_SECS: '2',
      TELHA_JOBS__REAPER_INTERVAL_SECS: '1',
      TELHA_JOBS__BACKOFF_BASE_SECS: '0',
      TELHA_RETENTION__ENABLED: 'false',
    };
    const servers: ServerProcess[] = [];
    // Each server needs a --data directory even though the store is PostgreSQL.
    const unused = tempDir('telha-multi-unused-');
    const workers: Worker[] = [];
    try {
      // Three servers start at once against an empty database: migrations must not race.
      servers.push(...(await Promise.all([0, 1, 2].map(async () => spawnServer(unused, await freePort(), env)))));
      const producer = new TelhaClient({ address: servers[1]!.address });
      for (let i = 0; i < JOBS; i += 1_000) {
        await producer.enqueueBatch(
          Array.from({ length: 1_000 }, (_, j) => ({ kind: 'multi', payload: `job ${i + j}` })),
          acme,
        );
      }
      let completions = 0;
      let reachedKillPoint!: () => void;
      const killPoint = new Promise<void>((resolve) => (reachedKillPoint = resolve));
      for (let w = 0; w < 6; w++) {
        workers.push(
          new Worker({
            address: servers[w % 3]!.address,
            kinds: ['multi'],
            concurrency: 10,
            timeoutMs: 2_000,
            workerId: `w${w}`,
            // Work that takes a little time, so jobs are mid-handler when a server dies (not a wait).
            handler: () => new Promise((resolve) => setTimeout(resolve, 1)),
            onCompleted: () => {
              if (++completions === JOBS / 5) reachedKillPoint();
            },
          }).start(),
        );
      }
      await killPoint;
      servers[0]!.child.kill('SIGKILL');
      assert.equal(await servers[0]!.exited, 'SIGKILL');

      // The survivors' reapers hand the dead server's workers' leases to the others. The servers are
      // other processes, so their counts are the only word on when every job is done.
      await eventually(
        async () => {
          const counts = await producer.counts();
          return counts.every((r) => r.state === JobState.Completed);
        },
        'every job to complete on the surviving servers',
        120_000,
      );

      const all = await allJobs(producer, acme);
      assert.equal(all.length, JOBS, 'nothing lost, nothing duplicated');
      for (const job of all) {
        assert.equal(job.state, JobState.Completed);
        assert.equal(
          job.events.filter((e) => e.transition === 'completed').length,
          1,
          `job ${job.jobId} completed twice`,
        );
      }
      producer.close();
    } finally {
      await Promise.all(workers.map((w) => w.close(2_000)));
      for (const server of servers.slice(1)) {
        server.child.kill('SIGTERM');
        await server.exited;
      }
      await dropTestSchema(schema);
      rmSync(unused, { recursive: true, force: true });
    }
  });
});
