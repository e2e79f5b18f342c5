/** `telha serve` stops cleanly on SIGTERM: parked calls return, in-flight work lands, the store closes. */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { tempDir } from '../support/backends.ts';
import { freePort, spawnServer } from '../support/server.ts';

describe('graceful shutdown', () => {
  it('answers a parked lease with no jobs, exits 0 on SIGTERM, and leaves a store that reopens with everything', async () => {
    const dir = tempDir('telha-shutdown-');
    const port = await freePort();
    try {
      let server = await spawnServer(dir, port);
      const client = new TelhaClient({ address: server.address });
      const { job } = await client.enqueue({ kind: 'kept' }, tenantScope('acme'));
      const parked = client.lease({ workerId: 'w1', kinds: ['nothing-here'], waitMs: 25_000 });
      // Give the call time to reach the server and park; the answer, not the timing, is what is checked.
      await client.counts();
      server.child.kill('SIGTERM');
      assert.deepEqual(await parked, [], 'the parked lease is answered, empty, instead of being cut');
      assert.equal(await server.exited, 0);
      await assert.rejects(
        client.counts(),
        (error: unknown) => error instanceof TelhaError && error.code === ErrorCode.Unavailable,
      );
      server = await spawnServer(dir, port);
      const again = new TelhaClient({ address: server.address });
      assert.equal((await again.show(job.jobId)).state, JobState.Pending);
      server.child.kill('SIGTERM');
      assert.equal(await server.exited, 0);
      again.close();
      client.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
