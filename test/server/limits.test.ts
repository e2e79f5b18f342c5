import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { ErrorCode } from '../../src/core/errors.ts';
import { rejectsWith, TOKENS } from '../support/refuses.ts';
import { serversClosedAfterEach } from '../support/server.ts';

describe('kind limits over the SDK', () => {
  const startServer = serversClosedAfterEach();

  it('lets an operator set, list and clear limits, and refuses tenants and workers', async () => {
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

    await rejectsWith(tenant.setKindLimit('email', { concurrency: 1 }), ErrorCode.PermissionDenied);
    await rejectsWith(worker.setKindLimit('email', { concurrency: 1 }), ErrorCode.PermissionDenied);
    await rejectsWith(tenant.kindLimits(), ErrorCode.PermissionDenied);
    await rejectsWith(tenant.clearKindLimit('email'), ErrorCode.PermissionDenied);
    assert.deepEqual(await server.queue.kindLimits(), []);

    const set = await operator.setKindLimit('email', { concurrency: 2, rate: '10/1h' });
    assert.deepEqual(
      [set.kindPrefix, set.concurrency, set.rate, set.by, set.leased, set.tokens],
      ['email', 2, { count: 10, periodMs: 3_600_000 }, 'ops', 0, null],
    );
    for (let i = 0; i < 3; i++) await tenant.enqueue({ kind: 'email', payload: `${i}` });
    assert.equal((await worker.lease({ workerId: 'w', limit: 10 })).length, 2);
    const [listed, ...rest] = await operator.kindLimits();
    assert.deepEqual(rest, []);
    assert.deepEqual([listed?.leased, listed?.tokens, listed?.rate], [2, 8, { count: 10, periodMs: 3_600_000 }]);

    // Bad input: refused naming the field, nothing written.
    await rejectsWith(operator.setKindLimit('email', { concurrency: 0 }), ErrorCode.InvalidArgument, 'concurrency');
    await rejectsWith(operator.setKindLimit('email', { rate: 'many/s' }), ErrorCode.InvalidArgument, 'rate');
    await rejectsWith(operator.setKindLimit('', { concurrency: 1 }), ErrorCode.InvalidArgument, 'kind_prefix');
    await rejectsWith(operator.setKindLimit('email', {}), ErrorCode.InvalidArgument, 'concurrency');
    assert.equal((await operator.kindLimits())[0]?.concurrency, 2);

    await operator.clearKindLimit('email');
    assert.deepEqual(await operator.kindLimits(), []);
    await rejectsWith(operator.clearKindLimit('email'), ErrorCode.NotFound);
    assert.equal((await worker.lease({ workerId: 'w', limit: 10 })).length, 1);
  });

  it('seeds the limits of [jobs.kinds] when the server starts', async () => {
    const server = await startServer({ jobs: { kinds: { 'email:bulk': { rate: '10/1m' } } } });
    const client = new TelhaClient({ address: server.address });
    const [limit, ...rest] = await client.kindLimits();
    assert.deepEqual(rest, []);
    assert.deepEqual(
      [limit?.kindPrefix, limit?.rate, limit?.by],
      ['email:bulk', { count: 10, periodMs: 60_000 }, 'config'],
    );
  });
});
