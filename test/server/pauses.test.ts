import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { ErrorCode } from '../../src/core/errors.ts';
import { ANY_SCOPE, tenantScope } from '../../src/core/types.ts';
import { rejectsWith, TOKEN_ROLES, TOKENS } from '../support/refuses.ts';
import { serversClosedAfterEach } from '../support/server.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');
describe('pauses over the SDK', () => {
  const startServer = serversClosedAfterEach();

  it('lets a tenant pause its own scope only, an operator any scope or everywhere, a worker none', async () => {
    const server = await startServer({
      server: {
        tokens: [...TOKEN_ROLES],
      },
    });
    const address = server.address;
    const [acmeClient, globexClient, worker, operator] = [
      TOKENS.acme,
      TOKENS.globex,
      TOKENS.worker,
      TOKENS.operator,
    ].map((token) => new TelhaClient({ address, token })) as [TelhaClient, TelhaClient, TelhaClient, TelhaClient];

    await acmeClient.enqueue({ kind: 'email:send', payload: 'a' });
    await globexClient.enqueue({ kind: 'email:send', payload: 'g' });
    const own = await acmeClient.pause('email:');
    assert.deepEqual(own.scope, acme);
    assert.equal(own.by, 'tenant:acme');

    // Another tenant's scope, or everywhere: refused, naming the field, and nothing written.
    await rejectsWith(acmeClient.pause('email:', globex), ErrorCode.PermissionDenied, 'scope.tenant');
    await rejectsWith(acmeClient.pause('x', 'everywhere'), ErrorCode.PermissionDenied, 'everywhere');
    await rejectsWith(acmeClient.resume('email:', globex), ErrorCode.PermissionDenied, 'scope.tenant');
    await rejectsWith(worker.pause('email:', acme), ErrorCode.PermissionDenied);
    await rejectsWith(worker.pauses(), ErrorCode.PermissionDenied);
    assert.deepEqual(
      (await server.queue.pauses(ANY_SCOPE)).map((p) => [p.scope, p.kindPrefix]),
      [[acme, 'email:']],
    );

    // The paused job waits; the other tenant's is leased.
    const leased = await worker.lease({ workerId: 'w', limit: 10 });
    assert.deepEqual(
      leased.map((j) => j.tenant),
      ['globex'],
    );

    await operator.pause('report', 'everywhere');
    assert.deepEqual(
      (await globexClient.pauses()).map((p) => [p.scope, p.kindPrefix]),
      [['everywhere', 'report']],
    );
    assert.equal((await operator.pauses()).length, 2);

    await acmeClient.resume('email:');
    assert.deepEqual(
      (await worker.lease({ workerId: 'w', limit: 10 })).map((j) => j.tenant),
      ['acme'],
    );
    await rejectsWith(acmeClient.resume('email:'), ErrorCode.NotFound);
    await operator.resume('report', 'everywhere');
    assert.deepEqual(await operator.pauses(), []);
  });
});
