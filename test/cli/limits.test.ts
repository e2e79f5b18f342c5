/** `telha limits set|clear|list` against a live server. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANY_SCOPE, tenantScope } from '../../src/core/types.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { liveServer } from '../support/server.ts';

const acme = tenantScope('acme');

describe('telha limits', () => {
  const { server } = liveServer();
  const run = (...args: string[]): Promise<CliRun> => runCli(server, ...args);

  it('sets a limit, lists it with its leased jobs, and clears it', async () => {
    await server.queue.enqueueBatch([{ kind: 'email' }, { kind: 'email' }], acme);
    const set = await run('limits', 'set', 'email', '--concurrency', '1', '--rate', '100/1h');
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /limited email/);
    assert.equal((await server.queue.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 10 })).length, 1);

    const listed = await run('limits', 'list');
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^KIND PREFIX\s+CONCURRENCY\s+LEASED\s+RATE\s+TOKENS\s+BY$/m);
    assert.match(listed.stdout, /^email\s+1\s+1\s+100\/1h\s+99\s/m);
    const json = JSON.parse((await run('limits', 'list', '--json')).stdout) as {
      limits: { kindPrefix: string; concurrency: number; leased: number; rate: string }[];
    };
    assert.deepEqual(
      json.limits.map((l) => [l.kindPrefix, l.concurrency, l.leased, l.rate]),
      [['email', 1, 1, '100/1h']],
    );

    assert.equal((await run('limits', 'clear', 'email')).code, 0);
    assert.equal((await run('limits', 'list')).stdout.trim(), '(no kind limits)');
    const missing = await run('limits', 'clear', 'email');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not found/i);
  });

  it('refuses a limit with no bound, and a value the server refuses, as bad usage naming the flag', async () => {
    assert.equal((await run('limits', 'set', 'x')).code, 2);
    const bad = await run('limits', 'set', 'x', '--rate', 'many/s');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^error: --rate "many\/s" is not a rate/);
    assert.deepEqual(await server.queue.kindLimits(), []);
  });
});
