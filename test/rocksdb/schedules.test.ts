import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tenantScope } from '../../src/core/types.ts';
import { rocksHarness } from '../support/backends.ts';

const acme = tenantScope('acme');

describe('rocksdb schedules', () => {
  it('keeps schedules and their due times across a restart, and catches up once', async () => {
    const h = await rocksHarness();
    try {
      const start = h.clock.now();
      await h.queue.createSchedule({ name: 'minutely', everySecs: 60, job: { kind: 'report' } }, acme);
      await h.queue.createSchedule({ name: 'held', everySecs: 60, job: { kind: 'report' }, paused: true }, acme);
      h.clock.advanceSeconds(60);
      assert.equal((await h.queue.scheduler.tick()).length, 1);
      const queue = await h.reopen();
      assert.equal((await queue.getSchedule('minutely', acme)).lastDueAt, start + 60_000_000);
      assert.equal((await queue.scheduler.tick()).length, 0, 'the due time fired before the restart stays fired');
      h.clock.advanceSeconds(3_600);
      const fired = await queue.scheduler.tick();
      assert.deepEqual(
        fired.map((f) => f.schedule.name),
        ['minutely'],
      );
      assert.equal(fired[0]?.schedule.lastDueAt, start + 61 * 60_000_000);
      assert.equal((await queue.list({ scope: acme })).jobs.length, 2);
    } finally {
      await h.close();
    }
  });
});
