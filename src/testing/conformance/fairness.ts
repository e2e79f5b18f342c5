/** Conformance cases: the worker fleet's fair order across tenants (`core/fair-order.ts`). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scopeOfTenant } from '../../codec/keys.ts';
import { ANY_SCOPE, SYSTEM_SCOPE, tenantScope, type JobRecord } from '../../core/types.ts';
import { acme, type Suite } from './context.ts';

/** Tenant names in the order the fair order visits them: their scope bytes' order. */
function inScopeOrder(tenants: readonly string[]): string[] {
  return [...tenants].sort((a, b) => Buffer.compare(scopeOfTenant(a), scopeOfTenant(b)));
}

/** Enqueue `count` jobs of kind `k` for `tenant`, payloads `<tenant>-<i>` so a test can read the order. */
async function fill(s: Suite, tenant: string, count: number): Promise<void> {
  await s.q.enqueueBatch(
    Array.from({ length: count }, (_, i) => ({ kind: 'k', payload: `${tenant}-${i}` })),
    tenantScope(tenant),
  );
}

function labels(jobs: readonly JobRecord[]): string[] {
  return jobs.map((job) => Buffer.from(job.payload).toString());
}

async function leaseOneByOne(s: Suite, count: number, kinds?: string[]): Promise<JobRecord[]> {
  const leased: JobRecord[] = [];
  for (let i = 0; i < count; i++) leased.push(await s.lease(ANY_SCOPE, 'fleet', kinds));
  return leased;
}

export function fairnessCases(s: Suite): void {
  describe('the fleet’s fair order across tenants', () => {
    const tenants = ['big', 't1', 't2', 't3'];
    const order = inScopeOrder(tenants);

    it('serves one job per tenant in turn, in scope order, however many one tenant holds', async () => {
      await fill(s, 'big', 30);
      for (const tenant of ['t1', 't2', 't3']) await fill(s, tenant, 2);
      const leased = await leaseOneByOne(s, 10);
      const expected = [...order.map((t) => `${t}-0`), ...order.map((t) => `${t}-1`), 'big-2', 'big-3'];
      assert.deepEqual(labels(leased), expected);
    });

    it('a batch claim takes the same turns as single claims, and the next claim goes on from there', async () => {
      for (const tenant of tenants) await fill(s, tenant, 3);
      const batch = await s.q.lease({ workerId: 'fleet', limit: 6 });
      const next = await s.q.lease({ workerId: 'fleet', limit: 3 });
      const all = [...order.map((t) => `${t}-0`), ...order.map((t) => `${t}-1`), ...order.map((t) => `${t}-2`)];
      assert.deepEqual(labels(batch), all.slice(0, 6));
      assert.deepEqual(labels(next), all.slice(6, 9));
    });

    it('keeps priority and FIFO order within each tenant', async () => {
      await s.q.enqueueBatch(
        [
          { kind: 'k', payload: 'late', priority: 200 },
          { kind: 'k', payload: 'urgent', priority: 0 },
          { kind: 'k', payload: 'normal', priority: 128 },
        ],
        acme,
      );
      assert.deepEqual(labels(await leaseOneByOne(s, 3)), ['urgent', 'normal', 'late']);
    });

    it('takes system jobs first when the worker asks for them, then tenants in turn', async () => {
      await fill(s, 't1', 2);
      await fill(s, 't2', 2);
      await s.q.enqueueBatch(
        [
          { kind: 'system:a', payload: 'sys-0' },
          { kind: 'system:a', payload: 'sys-1' },
        ],
        SYSTEM_SCOPE,
      );
      const leased = await s.q.lease({ workerId: 'fleet', kinds: ['system:', 'k'], limit: 4 });
      const two = inScopeOrder(['t1', 't2']);
      assert.deepEqual(labels(leased), ['sys-0', 'sys-1', `${two[0]}-0`, `${two[1]}-0`]);
    });

    it('follows the kind filter: a tenant with no wanted kind is passed over', async () => {
      await fill(s, 't1', 2);
      await s.q.enqueue({ kind: 'other', payload: 't2-other' }, tenantScope('t2'));
      await fill(s, 't3', 1);
      const leased = await s.q.lease({ workerId: 'fleet', kinds: ['k'], limit: 3 });
      const two = inScopeOrder(['t1', 't3']);
      const expected = two[0] === 't1' ? ['t1-0', 't3-0', 't1-1'] : ['t3-0', 't1-0', 't1-1'];
      assert.deepEqual(labels(leased), expected);
    });

    it('leaves a claim in one tenant’s scope in key order', async () => {
      await fill(s, 'big', 3);
      await fill(s, 't1', 1);
      const own = await s.q.lease({ workerId: 'w', scope: tenantScope('big'), limit: 3 });
      assert.deepEqual(labels(own), ['big-0', 'big-1', 'big-2']);
    });

    it('with jobs.fair_tenants = false, takes ready jobs in key order, scope by scope', async () => {
      await s.withHarness({ config: { jobs: { fair_tenants: false } } });
      for (const tenant of tenants) await fill(s, tenant, 2);
      const leased = await s.q.lease({ workerId: 'fleet', limit: 8 });
      assert.deepEqual(
        labels(leased),
        order.flatMap((t) => [`${t}-0`, `${t}-1`]),
      );
    });
  });
}
