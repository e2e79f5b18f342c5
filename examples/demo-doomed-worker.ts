/**
 * The worker that dies in `npm run demo`: it leases one `fragile` job,
 * announces it, and hangs until the demo kills it with SIGKILL.
 * Usage: demo-doomed-worker.ts <address>
 */
import { Worker } from '../src/client/index.ts';

const [address] = process.argv.slice(2);
if (address === undefined) throw new Error('usage: demo-doomed-worker.ts <address>');
new Worker({
  address,
  kinds: ['fragile'],
  concurrency: 1,
  workerId: `doomed-${process.pid}`,
  // Its first heartbeat would come at 90% of the lease; it dies long before, so the lease the demo
  // waits out runs from the moment it was granted.
  heartbeatFraction: 0.9,
  handler: (job) => {
    process.stdout.write(`leased ${job.jobId}\n`);
    return new Promise<void>(() => {});
  },
}).start();
