/**
 * Pauses on a PostgreSQL store shared by several servers: claims read `kind_pauses` in their own
 * statement, so a pause made through one server holds on every other at once, survives a
 * restart, and a resume wakes the other servers' parked lease waiters.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../src/core/clock.ts';
import { ANY_SCOPE, tenantScope } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { testConfig } from '../../src/testing/conformance/harness.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');

async function serverOn(schema: string, clock: ManualClock): Promise<Queue> {
  // A long poll interval: a waiter woken in time was woken by the notification, not by polling.
  const store = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 4, pollIntervalMs: 60_000 });
  return new Queue({ store, config: testConfig(), clock, services: false });
}

describe('postgres pauses across servers', () => {
  it('a pause through one server stops claims on another at once; a resume wakes its waiters', async () => {
    const schema = uniqueSchema('pause');
    const clock = new ManualClock();
    const a = await serverOn(schema, clock);
    const b = await serverOn(schema, clock);
    try {
      await a.enqueue({ kind: 'email:send', payload: 'acme' }, acme);
      await a.enqueue({ kind: 'email:send', payload: 'globex' }, globex);
      await a.pause({ kindPrefix: 'email:', scope: acme });
      const fair = await b.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 10 });
      assert.deepEqual(
        fair.map((j) => j.tenant),
        ['globex'],
      );
      assert.equal(await b.leaseNext({ workerId: 'w', scope: acme }), null);

      const waiting = b.lease({ workerId: 'w', scope: acme, limit: 1, waitMs: 30_000 });
      await a.resume({ kindPrefix: 'email:', scope: acme });
      const woken = await waiting;
      assert.deepEqual(
        woken.map((j) => j.tenant),
        ['acme'],
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
      await dropTestSchema(schema);
    }
  });

  it('keeps pauses across a restart', async () => {
    const schema = uniqueSchema('pause');
    const clock = new ManualClock();
    const before = await serverOn(schema, clock);
    await before.enqueue({ kind: 'sync', payload: 'x' }, acme);
    await before.pause({ kindPrefix: 'sync', scope: 'everywhere', by: 'ops' });
    await before.close();
    const after = await serverOn(schema, clock);
    try {
      assert.deepEqual(
        (await after.pauses()).map((p) => [p.scope, p.kindPrefix, p.by]),
        [['everywhere', 'sync', 'ops']],
      );
      assert.equal(await after.leaseNext({ workerId: 'w', scope: ANY_SCOPE }), null);
    } finally {
      await after.close();
      await dropTestSchema(schema);
    }
  });
});
