import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { ErrorCode } from '../../src/core/errors.ts';
import { tenantScope } from '../../src/core/types.ts';
import { rejectsWith, TOKENS } from '../support/refuses.ts';
import { serversClosedAfterEach } from '../support/server.ts';

describe('tenant limits over the SDK', () => {
  const startServer = serversClosedAfterEach();

  it('lets an operator set, list and clear tenant limits, and refuses tenants and workers', async () => {
    const server = await startServer({
      server: {
        tokens: [
          { token: TOKENS.acme, role: 'tenant', tenant: 'acme' },
          { token: TOKENS.worker, role: 'worker' },
          { token: TOKENS.operator, role: 'operator', name: 'ops' },
        ],
      },
    });
    const address = server.address;
    const [tenant, worker, operator] = [TOKENS.acme, TOKENS.worker, TOKENS.operator].map(
      (token) => new TelhaClient({ address, token }),
    ) as [TelhaClient, TelhaClient, TelhaClient];

    await rejectsWith(tenant.setTenantLimit('acme', { concurrency: 1 }), ErrorCode.PermissionDenied);
    await rejectsWith(worker.setTenantLimit('acme', { concurrency: 1 }), ErrorCode.PermissionDenied);
    await rejectsWith(tenant.tenantLimits(), ErrorCode.PermissionDenied);
    await rejectsWith(tenant.clearTenantLimit('acme'), ErrorCode.PermissionDenied);
    assert.deepEqual(await server.queue.tenantLimits(), []);

    const set = await operator.setTenantLimit('acme', { concurrency: 2, rate: '10/1h', weight: 3 });
    assert.deepEqual(
      [set.tenant, set.concurrency, set.rate, set.weight, set.by, set.leased, set.tokens],
      ['acme', 2, { count: 10, periodMs: 3_600_000 }, 3, 'ops', 0, null],
    );
    for (let i = 0; i < 3; i++) await tenant.enqueue({ kind: 'k', payload: `${i}` });
    assert.equal((await worker.lease({ workerId: 'w', limit: 10 })).length, 2);
    const [listed, ...rest] = await operator.tenantLimits();
    assert.deepEqual(rest, []);
    assert.deepEqual([listed?.leased, listed?.tokens, listed?.weight], [2, 8, 3]);

    // Bad input: refused naming the field, nothing written.
    await rejectsWith(operator.setTenantLimit('acme', { concurrency: 0 }), ErrorCode.InvalidArgument, 'concurrency');
    await rejectsWith(operator.setTenantLimit('acme', { rate: 'many/s' }), ErrorCode.InvalidArgument, 'rate');
    await rejectsWith(operator.setTenantLimit('acme', { weight: 0 }), ErrorCode.InvalidArgument, 'weight');
    await rejectsWith(operator.setTenantLimit('acme', { weight: 1_001 }), ErrorCode.InvalidArgument, 'weight');
    await rejectsWith(operator.setTenantLimit('', { concurrency: 1 }), ErrorCode.InvalidArgument, 'tenant');
    await rejectsWith(operator.setTenantLimit('acme', {}), ErrorCode.InvalidArgument, 'concurrency');
    assert.equal((await operator.tenantLimits())[0]?.concurrency, 2);

    await operator.clearTenantLimit('acme');
    assert.deepEqual(await operator.tenantLimits(), []);
    await rejectsWith(operator.clearTenantLimit('acme'), ErrorCode.NotFound);
    assert.equal((await worker.lease({ workerId: 'w', limit: 10 })).length, 1);
  });

  it('seeds the limits of [jobs.tenants] when the server starts, and weighs the fleet’s turns', async () => {
    const server = await startServer({ jobs: { tenants: { heavy: { weight: 3 } } } });
    const client = new TelhaClient({ address: server.address });
    const [limit, ...rest] = await client.tenantLimits();
    assert.deepEqual(rest, []);
    assert.deepEqual([limit?.tenant, limit?.weight, limit?.by], ['heavy', 3, 'config']);
    for (const name of ['heavy', 'light']) {
      await server.queue.enqueueBatch(
        Array.from({ length: 8 }, () => ({ kind: 'k' })),
        tenantScope(name),
      );
    }
    const leased = await client.lease({ workerId: 'w', limit: 8 });
    assert.equal(leased.filter((j) => j.tenant === 'heavy').length, 6);
  });
});
