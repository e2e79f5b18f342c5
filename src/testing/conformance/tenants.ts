/** Conformance cases: tenant limits and the weighted fair order (`core/tenant-limits.ts`). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scopeOfTenant } from '../../codec/keys.ts';
import { ANY_SCOPE, SYSTEM_SCOPE, tenantScope, type JobRecord } from '../../core/types.ts';
import { acme, ErrorCode, globex, rejects, type Suite } from './context.ts';
import { fenceOf } from './harness.ts';

/** Enqueue `count` jobs of `kind` for `tenant`, payloads `<tenant>-<i>`. */
async function fill(s: Suite, tenant: string, count: number, kind = 'k'): Promise<void> {
  await s.q.enqueueBatch(
    Array.from({ length: count }, (_, i) => ({ kind, payload: `${tenant}-${i}` })),
    tenantScope(tenant),
  );
}

function tenantsOf(jobs: readonly JobRecord[]): string[] {
  return jobs.map((job) => job.tenant ?? 'system');
}

function countBy(jobs: readonly JobRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const tenant of tenantsOf(jobs)) counts[tenant] = (counts[tenant] ?? 0) + 1;
  return counts;
}

async function leaseOneByOne(s: Suite, count: number): Promise<JobRecord[]> {
  const leased: JobRecord[] = [];
  for (let i = 0; i < count; i++) {
    const [job] = await s.q.lease({ workerId: 'fleet' });
    if (job === undefined) break;
    leased.push(job);
  }
  return leased;
}

export function tenantCases(s: Suite): void {
  describe('tenant limits and weights', () => {
    it('serves weights 1:2:4 exactly 1/7, 2/7 and 4/7 of 700 leases, and every 7 in a row', async () => {
      for (const tenant of ['w1', 'w2', 'w4']) await fill(s, tenant, 450);
      await s.q.setTenantLimit({ tenant: 'w2', weight: 2 });
      await s.q.setTenantLimit({ tenant: 'w4', weight: 4 });
      const leased: JobRecord[] = [];
      // Batches of mixed sizes take the same turns as single claims.
      for (const limit of [1, 3, 7, 10, 29, 50]) leased.push(...(await s.q.lease({ workerId: 'fleet', limit })));
      leased.push(...(await leaseOneByOne(s, 700 - leased.length)));
      assert.deepEqual(countBy(leased), { w1: 100, w2: 200, w4: 400 });
      for (let i = 0; i + 7 <= leased.length; i += 7) {
        assert.deepEqual(countBy(leased.slice(i, i + 7)), { w1: 1, w2: 2, w4: 4 }, `turns ${i}-${i + 6}`);
      }
    });

    it('keeps key order within a tenant and gives a weighted tenant its share of a batch', async () => {
      await s.q.enqueueBatch(
        [
          { kind: 'k', payload: 'late', priority: 200 },
          { kind: 'k', payload: 'urgent', priority: 0 },
        ],
        acme,
      );
      await fill(s, 'globex', 3);
      await s.q.setTenantLimit({ tenant: 'acme', weight: 3 });
      const leased = await s.q.lease({ workerId: 'fleet', limit: 4 });
      assert.deepEqual(countBy(leased), { acme: 2, globex: 2 }, 'acme runs out after two');
      assert.deepEqual(
        leased.filter((j) => j.tenant === 'acme').map((j) => Buffer.from(j.payload).toString()),
        ['urgent', 'late'],
      );
    });

    it('a tenant with no work has no turns: the others share every lease', async () => {
      await fill(s, 'busy', 10);
      await s.q.setTenantLimit({ tenant: 'idle', weight: 50 });
      assert.equal((await s.q.lease({ workerId: 'fleet', limit: 10 })).length, 10);
    });

    it('leases at most `concurrency` of a tenant at once, across claims, kinds and workers', async () => {
      await fill(s, 'acme', 5, 'a');
      await fill(s, 'acme', 5, 'b');
      await fill(s, 'globex', 3);
      await s.q.setTenantLimit({ tenant: 'acme', concurrency: 2 });
      const first = await s.q.lease({ workerId: 'w1', limit: 100 });
      assert.deepEqual(countBy(first), { acme: 2, globex: 3 });
      assert.deepEqual(await s.q.lease({ workerId: 'w2', scope: acme, limit: 100 }), []);
      assert.deepEqual(await s.q.lease({ workerId: 'w2', limit: 100 }), []);
      const acmeJob = first.find((j) => j.tenant === 'acme') as JobRecord;
      await s.q.complete(acmeJob.jobId, fenceOf(acmeJob));
      assert.deepEqual(tenantsOf(await s.q.lease({ workerId: 'w2', scope: acme, limit: 100 })), ['acme']);
      const [status] = await s.q.tenantLimits();
      assert.equal(status?.leased, 2);
    });

    it('applies a tenant’s concurrency in key order too (one tenant’s scope, and every scope unfair)', async () => {
      await fill(s, 'acme', 4);
      await fill(s, 'globex', 2);
      await s.q.setTenantLimit({ tenant: 'acme', concurrency: 1 });
      const inScope = await s.q.lease({ workerId: 'w', scope: acme, limit: 4 });
      assert.equal(inScope.length, 1);
      const rest = await s.q.lease({ workerId: 'w', scope: globex, limit: 4 });
      assert.deepEqual(tenantsOf(rest), ['globex', 'globex']);
    });

    it('spends a tenant token per lease and refills them with the clock, up to the burst', async () => {
      await fill(s, 'acme', 8);
      await fill(s, 'globex', 2);
      await s.q.setTenantLimit({ tenant: 'acme', rate: '2/s' });
      assert.deepEqual(countBy(await s.q.lease({ workerId: 'w', limit: 100 })), { acme: 2, globex: 2 });
      assert.deepEqual(await s.q.lease({ workerId: 'w', limit: 100 }), []);
      // A waiter in the tenant's scope sleeps until the next whole token, half a second on.
      assert.equal(await s.h.store.nextGateAt(acme, s.now()), s.now() + 500_000);
      s.h.clock.advance(250_000);
      assert.deepEqual(await s.q.lease({ workerId: 'w', limit: 100 }), []);
      s.h.clock.advance(250_000);
      assert.equal((await s.q.lease({ workerId: 'w', limit: 100 })).length, 1);
      s.h.clock.advance(60_000_000);
      assert.equal((await s.q.lease({ workerId: 'w', limit: 100 })).length, 2, 'the burst, no more');
      assert.equal((await s.q.tenantLimits())[0]?.tokens, 0);
    });

    it('takes a job only when both its kind’s lane and its tenant have room', async () => {
      await fill(s, 'acme', 3, 'mail');
      await fill(s, 'acme', 3, 'report');
      await fill(s, 'globex', 3, 'mail');
      await s.q.setKindLimit({ kindPrefix: 'mail', concurrency: 2 });
      await s.q.setTenantLimit({ tenant: 'acme', concurrency: 2 });
      const leased = await s.q.lease({ workerId: 'w', limit: 100 });
      const mail = leased.filter((j) => j.kind === 'mail').length;
      assert.equal(mail, 2, 'the lane holds two');
      assert.equal(leased.filter((j) => j.tenant === 'acme').length, 2, 'the tenant holds two');
      assert.deepEqual(await s.q.lease({ workerId: 'w', limit: 100 }), []);
    });

    it('never limits system jobs, which come first', async () => {
      await s.q.enqueueBatch([{ kind: 'system:a' }, { kind: 'system:a' }], SYSTEM_SCOPE);
      await fill(s, 'acme', 2);
      await s.q.setTenantLimit({ tenant: 'acme', concurrency: 1 });
      const leased = await s.q.lease({ workerId: 'w', kinds: ['system:', 'k'], limit: 10 });
      assert.deepEqual(tenantsOf(leased), ['system', 'system', 'acme']);
    });

    it('lists limits by tenant with who set them, replaces and clears them', async () => {
      await s.q.setTenantLimit({ tenant: 'globex', rate: '10/1m', by: 'bob' });
      const set = await s.q.setTenantLimit({ tenant: 'acme', concurrency: 5, weight: 3, by: 'alice' });
      assert.deepEqual(set, {
        tenant: 'acme',
        concurrency: 5,
        rate: null,
        weight: 3,
        setAt: s.now(),
        by: 'alice',
      });
      assert.deepEqual(await s.q.tenantLimits(), [
        { ...set, leased: 0, tokens: null },
        {
          tenant: 'globex',
          concurrency: null,
          rate: { count: 10, periodMs: 60_000 },
          weight: 1,
          setAt: s.now(),
          by: 'bob',
          leased: 0,
          tokens: 10,
        },
      ]);
      await s.q.setTenantLimit({ tenant: 'acme', weight: 2 });
      assert.deepEqual(
        (await s.q.tenantLimits()).map((l) => [l.tenant, l.concurrency, l.weight]),
        [
          ['acme', null, 2],
          ['globex', null, 1],
        ],
      );
      await s.q.clearTenantLimit('acme');
      assert.deepEqual(
        (await s.q.tenantLimits()).map((l) => l.tenant),
        ['globex'],
      );
      await rejects(s.q.clearTenantLimit('acme'), ErrorCode.NotFound);
    });

    it('refuses bad limits naming the field, and writes nothing', async () => {
      await s.q.setTenantLimit({ tenant: 'ok', concurrency: 1 });
      const before = await s.q.tenantLimits();
      const cases: [Parameters<Suite['q']['setTenantLimit']>[0], string][] = [
        [{ tenant: '', concurrency: 1 }, 'tenant'],
        [{ tenant: 'has space', concurrency: 1 }, 'tenant'],
        [{ tenant: 'x'.repeat(129), concurrency: 1 }, 'tenant'],
        [{ tenant: 'a', concurrency: 0 }, 'concurrency'],
        [{ tenant: 'a', concurrency: 1.5 }, 'concurrency'],
        [{ tenant: 'a', concurrency: 1_000_001 }, 'concurrency'],
        [{ tenant: 'a', rate: 'often' }, 'rate'],
        [{ tenant: 'a', rate: { count: 0, periodMs: 1_000 } }, 'rate'],
        [{ tenant: 'a', weight: 0 }, 'weight'],
        [{ tenant: 'a', weight: 1_001 }, 'weight'],
        [{ tenant: 'a', weight: 2.5 }, 'weight'],
        [{ tenant: 'a' }, 'concurrency'],
        [{ tenant: 'a', weight: 1 }, 'concurrency'],
      ];
      for (const [options, field] of cases) {
        await rejects(s.q.setTenantLimit(options), ErrorCode.InvalidArgument, (e) => assert.equal(e.field, field));
      }
      await rejects(s.q.clearTenantLimit(''), ErrorCode.InvalidArgument);
      assert.deepEqual(await s.q.tenantLimits(), before);
    });

    it('refuses a new tenant past the store’s maximum, and replaces a held one', async () => {
      const limit = (tenant: string) => ({
        tenant,
        concurrency: 1,
        rate: null,
        weight: 1,
        setAt: s.now(),
        by: 'local',
      });
      await s.h.store.setTenantLimit(limit('a'), 2);
      await s.h.store.setTenantLimit(limit('b'), 2);
      await rejects(s.h.store.setTenantLimit(limit('c'), 2), ErrorCode.FailedPrecondition);
      await s.h.store.setTenantLimit({ ...limit('b'), concurrency: 7 }, 2);
      assert.deepEqual(
        (await s.h.store.listTenantLimits(s.now())).map((l) => [l.tenant, l.concurrency]),
        [
          ['a', 1],
          ['b', 7],
        ],
      );
    });

    it('wakes a parked lease when a job of a full tenant completes', async () => {
      await fill(s, 'acme', 2);
      await s.q.setTenantLimit({ tenant: 'acme', concurrency: 1 });
      const [first] = await s.q.lease({ workerId: 'w1', scope: acme });
      const leased = s.q.lease({ workerId: 'w2', scope: acme, waitMs: 600_000 });
      while (s.q.waits.parked === 0) await new Promise((resolve) => setImmediate(resolve));
      await s.q.complete((first as JobRecord).jobId, fenceOf(first as JobRecord));
      assert.equal((await leased).length, 1);
    });

    it('serves equal weights in turn, one job per tenant', async () => {
      const tenants = ['t1', 't2', 't3'];
      for (const tenant of tenants) await fill(s, tenant, 2);
      await s.q.setTenantLimit({ tenant: 'unrelated', concurrency: 1 });
      const order = [...tenants].sort((a, b) => Buffer.compare(scopeOfTenant(a), scopeOfTenant(b)));
      assert.deepEqual(tenantsOf(await s.q.lease({ workerId: 'fleet', scope: ANY_SCOPE, limit: 6 })), [
        ...order,
        ...order,
      ]);
    });
  });
}
