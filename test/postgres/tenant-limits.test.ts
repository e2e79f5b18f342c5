/**
 * Tenant limits on a PostgreSQL store shared by several servers: claims that may take a limited
 * tenant's work lock the rows of `tenant_limits` and count its leases after the lock, so a
 * tenant's concurrency and rate hold exactly across servers, however their claims interleave.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../../src/core/clock.ts';
import { ANY_SCOPE, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { fenceOf, testConfig } from '../../src/testing/conformance/harness.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');

describe('postgres tenant limits across servers', () => {
  const clock = new ManualClock();
  const schema = uniqueSchema('tenants');
  const queues: Queue[] = [];

  before(async () => {
    for (let i = 0; i < 2; i++) {
      const store = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 4, pollIntervalMs: 60_000 });
      queues.push(new Queue({ store, config: testConfig(), clock, services: false }));
    }
  });
  after(async () => {
    await Promise.all(queues.map((q) => q.close()));
    await dropTestSchema(schema);
  });

  it('holds a tenant’s concurrency exactly across two servers claiming at once', async () => {
    const [a, b] = queues as [Queue, Queue];
    await a.enqueueBatch(
      Array.from({ length: 60 }, () => ({ kind: 'k' })),
      acme,
    );
    await a.enqueueBatch(
      Array.from({ length: 10 }, () => ({ kind: 'k' })),
      globex,
    );
    await b.setTenantLimit({ tenant: 'acme', concurrency: 3 });
    const claims = Array.from({ length: 16 }, (_, i) =>
      (i % 2 === 0 ? a : b).lease({ workerId: `w${i}`, scope: i % 4 < 2 ? ANY_SCOPE : acme, limit: 4 }),
    );
    const leased = (await Promise.all(claims)).flat();
    const ofAcme = leased.filter((j) => j.tenant === 'acme');
    assert.equal(ofAcme.length, 3, 'three of acme, whichever server claimed');
    assert.equal(leased.filter((j) => j.tenant === 'globex').length, 10, 'globex unlimited');
    assert.equal((await a.tenantLimits())[0]?.leased, 3);
    // One completes on server A: server B may take exactly one more.
    await a.complete((ofAcme[0] as JobRecord).jobId, fenceOf(ofAcme[0] as JobRecord));
    const again = (
      await Promise.all([b.lease({ workerId: 'x', scope: acme, limit: 5 }), a.lease({ workerId: 'y', limit: 5 })])
    ).flat();
    assert.equal(again.length, 1);
  });

  it('holds a tenant’s rate exactly across two servers: one bucket, in the row', async () => {
    const [a, b] = queues as [Queue, Queue];
    const tenant = tenantScope('rated');
    await a.enqueueBatch(
      Array.from({ length: 20 }, () => ({ kind: 'k' })),
      tenant,
    );
    await a.setTenantLimit({ tenant: 'rated', rate: '5/s' });
    const claims = Array.from({ length: 8 }, (_, i) =>
      (i % 2 === 0 ? a : b).lease({ workerId: `r${i}`, scope: tenant, limit: 3 }),
    );
    assert.equal((await Promise.all(claims)).flat().length, 5);
  });
});
