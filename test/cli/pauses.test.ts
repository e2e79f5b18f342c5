/** `telha pause`, `telha resume` and `telha pauses` against a live server. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANY_SCOPE, tenantScope } from '../../src/core/types.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { liveServer } from '../support/server.ts';

const acme = tenantScope('acme');

describe('telha pause, resume and pauses', () => {
  const { server } = liveServer();
  const run = (...args: string[]): Promise<CliRun> => runCli(server, ...args);

  it('pauses a prefix in a tenant scope and everywhere, lists them, and resumes them', async () => {
    await server.queue.enqueue({ kind: 'email:send' }, acme);
    const paused = await run('pause', 'email:', '--tenant', 'acme');
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /paused email:/);
    assert.equal((await run('pause', 'report', '--everywhere', '--json')).code, 0);
    assert.equal(await server.queue.leaseNext({ workerId: 'w', scope: ANY_SCOPE }), null);

    const listed = await run('pauses');
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^SCOPE\s+KIND PREFIX\s+PAUSED AT\s+BY$/m);
    assert.match(listed.stdout, /^\(everywhere\)\s+report\s/m);
    assert.match(listed.stdout, /^acme\s+email:\s/m);
    const json = JSON.parse((await run('pauses', '--tenant', 'acme', '--json')).stdout) as {
      pauses: { scope: string; kindPrefix: string }[];
    };
    assert.deepEqual(
      json.pauses.map((p) => [p.scope, p.kindPrefix]),
      [
        ['(everywhere)', 'report'],
        ['acme', 'email:'],
      ],
    );

    assert.equal((await run('resume', 'email:', '--tenant', 'acme')).code, 0);
    assert.equal((await server.queue.leaseNext({ workerId: 'w', scope: ANY_SCOPE }))?.kind, 'email:send');
    const missing = await run('resume', 'email:', '--tenant', 'acme');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not found/i);
    assert.equal((await run('resume', 'report', '--everywhere')).code, 0);
    assert.equal((await run('pauses')).stdout.trim(), '(no pauses)');
  });

  it('refuses a pause with no scope, or two, as bad usage', async () => {
    assert.equal((await run('pause', 'x')).code, 2);
    assert.equal((await run('pause', 'x', '--tenant', 'acme', '--everywhere')).code, 2);
    assert.deepEqual(await server.queue.pauses(), []);
  });
});
