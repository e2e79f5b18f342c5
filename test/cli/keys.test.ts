/** `telha jobs enqueue --order-key`, `telha keys blocked` and `telha keys release` against a live server. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ORDER_WAIT } from '../../src/core/ordered-keys.ts';
import { tenantScope } from '../../src/core/types.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { liveServer } from '../support/server.ts';

const acme = tenantScope('acme');

describe('telha keys', () => {
  const { server } = liveServer();
  const run = (...args: string[]): Promise<CliRun> => runCli(server, ...args);
  const enqueue = async (...more: string[]): Promise<string> => {
    const done = await run(
      'jobs',
      'enqueue',
      '--kind',
      'ledger',
      '--tenant',
      'acme',
      '--order-key',
      'account-9',
      ...more,
    );
    assert.equal(done.code, 0, done.stderr);
    return done.stdout.trim();
  };

  it('enqueues in a key, lists the key its dead head blocks, and releases it', async () => {
    const head = await enqueue();
    const next = await enqueue('--order-on-dead', 'release');
    const waiting = await server.queue.show(next);
    assert.equal(waiting.notBefore, ORDER_WAIT);
    assert.equal(waiting.orderReleaseOnDead, true);
    const shown = await run('jobs', 'show', next);
    assert.match(shown.stdout, /waiting for its turn in order key account-9/);
    assert.match(shown.stdout, /order key\s+account-9 \(releases it when dead\)/);

    assert.equal((await run('keys', 'blocked')).stdout.trim(), '(no blocked keys)');
    const leased = await server.queue.leaseNext({ workerId: 'w', scope: acme });
    assert.equal(leased?.jobId, head);
    await server.queue.fail(
      head,
      { workerId: 'w', leaseGeneration: leased.leaseGeneration },
      { error: 'x', permanent: true },
    );

    const listed = await run('keys', 'blocked', '--tenant', 'acme');
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^SCOPE\s+ORDER KEY\s+HEAD\s+WAITING$/m);
    assert.match(listed.stdout, new RegExp(`^acme\\s+account-9\\s+${head} \\(dead\\)\\s+1$`, 'm'));
    const json = JSON.parse((await run('keys', 'blocked', '--json')).stdout) as { keys: { orderKey: string }[] };
    assert.deepEqual(
      json.keys.map((k) => k.orderKey),
      ['account-9'],
    );

    assert.equal((await run('keys', 'release', 'account-9')).code, 2, 'an operator names the scope');
    const released = await run('keys', 'release', 'account-9', '--tenant', 'acme');
    assert.equal(released.code, 0, released.stderr);
    assert.equal(released.stdout.trim(), `released account-9: ${next} runs next`);
    assert.equal((await server.queue.show(next)).notBefore, null);
    const again = await run('keys', 'release', 'account-9', '--tenant', 'acme');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /not blocked/);
  });

  it('refuses a bad policy or key naming the flag, writing nothing', async () => {
    const before = await server.queue.counts(acme);
    const policy = await run(
      'jobs',
      'enqueue',
      '--kind',
      'k',
      '--tenant',
      'acme',
      '--order-key',
      'a',
      '--order-on-dead',
      'later',
    );
    assert.equal(policy.code, 2);
    assert.match(policy.stderr, /--order-on-dead/);
    const key = await run('jobs', 'enqueue', '--kind', 'k', '--tenant', 'acme', '--order-key', 'x'.repeat(256));
    assert.equal(key.code, 2, key.stderr);
    assert.match(key.stderr, /--order-key/);
    assert.deepEqual(await server.queue.counts(acme), before);
  });
});
