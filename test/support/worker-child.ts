/**
 * A worker process for the crash test: leases one kind and, for each job,
 * prints `started <job id> <generation> <worker id>` and then hangs, until it
 * is killed. Usage: worker-child.ts <address> <kind>
 */
import { Worker } from '../../src/client/worker.ts';

const [address, kind] = process.argv.slice(2);
if (address === undefined || kind === undefined) throw new Error('usage: worker-child.ts <address> <kind>');
const worker = new Worker({
  address,
  kinds: [kind],
  concurrency: 1,
  workerId: `doomed-${process.pid}`,
  // Heartbeat rarely: the parent kills this process long before the lease runs out.
  heartbeatFraction: 0.9,
  handler: (job) => {
    process.stdout.write(`started ${job.id} ${job.leaseGeneration} doomed-${process.pid}\n`);
    return new Promise<void>(() => {});
  },
});
worker.start();
