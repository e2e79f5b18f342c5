/**
 * The engine in a few lines: enqueue, lease, heartbeat, complete, on a
 * temporary store. `test/package/examples.test.ts` runs every file in examples/
 * (and `test/package/readme.test.ts` every block of the README).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeConfig, openQueue, tenantScope } from '../src/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'telha-quickstart-'));
const queue = await openQueue({ config: makeConfig({ storage: { path: dir } }) });
try {
  const acme = tenantScope('acme');
  await queue.enqueue({ kind: 'email', payload: Buffer.from('{"to":"a@b.c"}'), idempotencyKey: 'order-17' }, acme);

  const job = await queue.leaseNext({ workerId: 'worker-1', kinds: ['email'], scope: acme });
  if (job) {
    const fence = { workerId: 'worker-1', leaseGeneration: job.leaseGeneration };
    try {
      await queue.heartbeat(job.jobId, fence);
      const { job: done } = await queue.complete(job.jobId, fence);
      console.log(`${done.kind} ${done.jobId}: ${done.events.map((e) => e.transition).join(' → ')}`);
    } catch (error) {
      await queue.fail(job.jobId, fence, { error: String(error) });
    }
  }
} finally {
  await queue.close();
  rmSync(dir, { recursive: true, force: true });
}
