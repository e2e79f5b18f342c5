import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANY_SCOPE, tenantScope } from '../../src/core/types.ts';
import { rocksHarness } from '../support/backends.ts';

const acme = tenantScope('acme');

describe('rocksdb pauses', () => {
  it('keeps pauses across a restart: paused work stays held back, resumed work comes in order', async () => {
    const h = await rocksHarness();
    try {
      await h.queue.enqueueBatch(
        [
          { kind: 'email:send', payload: '0' },
          { kind: 'email:send', payload: '1' },
        ],
        acme,
      );
      await h.queue.pause({ kindPrefix: 'email:', scope: acme, by: 'ops' });
      await h.queue.pause({ kindPrefix: 'sync', scope: 'everywhere' });
      const queue = await h.reopen();
      assert.deepEqual(
        (await queue.pauses()).map((p) => [p.scope, p.kindPrefix, p.by]),
        [
          ['everywhere', 'sync', 'local'],
          [acme, 'email:', 'ops'],
        ],
      );
      assert.equal(await queue.leaseNext({ workerId: 'w', scope: ANY_SCOPE }), null);
      await queue.resume({ kindPrefix: 'email:', scope: acme });
      const leased = await queue.lease({ workerId: 'w', scope: ANY_SCOPE, limit: 10 });
      assert.deepEqual(
        leased.map((j) => Buffer.from(j.payload).toString()),
        ['0', '1'],
      );
      const again = await h.reopen();
      assert.equal((await again.pauses()).length, 1);
    } finally {
      await h.close();
    }
  });
});
