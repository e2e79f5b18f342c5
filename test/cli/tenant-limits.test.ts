/** `telha tenants limit set|clear|list` against a live server. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANY_SCOPE, tenantScope } from '../../src/core/types.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { liveServer } from '../support/server.ts';

describe('telha tenants limit', () => {
  const { server } = liveServer();
  const run = (...args: string[]): Promise<CliRun> => runCli(server, ...args);

  it('sets a tenant limit, lists it with its leased jobs, and clears it', async () => {
    await server.queue.enqueueBatch([{ kind: 'k' }, { kind: 'k' }], tenantScope('acme'));
    const set = await run('tenants', 'limit', 'set', 'acme', '--concurrency', '1', '--rate', '100/1h', '--weight', '3');
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /limited tenant acme/);
    assert.equal((await server.queue.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 10 })).length, 1);

    const listed = await run('tenants', 'limit', 'list');
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^TENANT\s+WEIGHT\s+CONCURRENCY\s+LEASED\s+RATE\s+TOKENS\s+BY$/m);
    assert.match(listed.stdout, /^acme\s+3\s+1\s+1\s+100\/1h\s+99\s/m);
    const json = JSON.parse((await run('tenants', 'limit', 'list', '--json')).stdout) as {
      limits: { tenant: string; weight: number; concurrency: number; leased: number; rate: string }[];
    };
    assert.deepEqual(
      json.limits.map((l) => [l.tenant, l.weight, l.concurrency, l.leased, l.rate]),
      [['acme', 3, 1, 1, '100/1h']],
    );

    assert.equal((await run('tenants', 'limit', 'clear', 'acme')).code, 0);
    assert.equal((await run('tenants', 'limit', 'list')).stdout.trim(), '(no tenant limits)');
    const missing = await run('tenants', 'limit', 'clear', 'acme');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not found/i);
  });

  it('refuses a limit with nothing to set (bad usage), and a value the server refuses naming the field', async () => {
    assert.equal((await run('tenants', 'limit', 'set', 'x')).code, 2);
    const bad = await run('tenants', 'limit', 'set', 'x', '--weight', '5000');
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(bad.stderr, /invalid_argument: weight: must be a whole number from 1 to 1000/);
    assert.deepEqual(await server.queue.tenantLimits(), []);
  });
});
