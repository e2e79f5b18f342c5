/**
 * Schedules on a PostgreSQL store shared by several servers: passes that run at the same moment
 * on different servers enqueue one job per due time, and a server that starts after the others
 * stopped catches up once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../src/core/clock.ts';
import { tenantScope } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { testConfig } from '../../src/testing/conformance/harness.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';

const acme = tenantScope('acme');
const SECOND = 1_000_000;

async function serversOn(schema: string, n: number, clock: ManualClock): Promise<Queue[]> {
  const queues: Queue[] = [];
  for (let i = 0; i < n; i++) {
    const store = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 4 });
    queues.push(new Queue({ store, config: testConfig(), clock, services: false }));
  }
  return queues;
}

describe('postgres schedules across servers', () => {
  it('enqueues exactly one job per due time when three servers fire at the same moment', async () => {
    const schema = uniqueSchema('sched');
    const clock = new ManualClock();
    const queues = await serversOn(schema, 3, clock);
    try {
      const [first] = queues as [Queue];
      const names = Array.from({ length: 20 }, (_, i) => `s${i}`);
      for (const name of names) {
        await first.createSchedule({ name, everySecs: 60, job: { kind: 'report' } }, acme);
      }
      await first.createSchedule({ name: 'hourly', cron: '0 * * * *', job: { kind: 'report' } }, acme);
      for (let round = 1; round <= 3; round++) {
        clock.advanceSeconds(60);
        const passes = await Promise.all(queues.flatMap((q) => [q.scheduler.tick(), q.scheduler.tick()]));
        const created = passes.flat().filter((f) => f.job.created);
        assert.equal(created.length, names.length, `round ${round}: one job per schedule`);
      }
      clock.advanceSeconds(3_600);
      await Promise.all(queues.map((q) => q.scheduler.tick()));
      const jobs = (await first.list({ scope: acme, limit: 1_000 })).jobs;
      const keys = jobs.map((job) => job.idempotencyKey);
      assert.equal(new Set(keys).size, keys.length, 'no due time enqueued twice');
      // Three rounds plus one catch-up for each interval schedule, and one hourly job.
      assert.equal(jobs.length, names.length * 4 + 1);
    } finally {
      await Promise.all(queues.map((q) => q.close()));
      await dropTestSchema(schema);
    }
  });

  it('catches up once for a downtime when a server starts again', async () => {
    const schema = uniqueSchema('sched');
    const clock = new ManualClock();
    const [before] = (await serversOn(schema, 1, clock)) as [Queue];
    const start = clock.now();
    await before.createSchedule({ name: 'minutely', everySecs: 60, job: { kind: 'report' } }, acme);
    await before.close();
    clock.advanceSeconds(3_600 + 1);
    const [after] = (await serversOn(schema, 1, clock)) as [Queue];
    try {
      const fired = await after.scheduler.tick();
      assert.equal(fired.length, 1);
      assert.equal(fired[0]?.schedule.lastDueAt, start + 3_600 * SECOND);
      assert.equal((await after.list({ scope: acme })).jobs.length, 1);
    } finally {
      await after.close();
      await dropTestSchema(schema);
    }
  });
});
