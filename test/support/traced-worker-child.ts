/**
 * A worker process for the tracing tests (run with test/support/otel-spans.mjs loaded): works
 * one kind, failing a job's first attempt when its payload is `fail-once`, and prints
 * `completed <job id>` for each job it completes. Usage: traced-worker-child.ts <address> <kind>
 */
import { Worker } from '../../src/client/worker.ts';
import { silentLogger } from '../../src/core/logger.ts';

const [address, kind] = process.argv.slice(2);
if (address === undefined || kind === undefined) throw new Error('usage: traced-worker-child.ts <address> <kind>');
const worker = new Worker({
  address,
  kinds: [kind],
  workerId: `traced-${process.pid}`,
  logger: silentLogger,
  handler: (job) => {
    if (Buffer.from(job.payload).toString() === 'fail-once' && job.attempts === 0) {
      return Promise.reject(new Error('first attempt fails'));
    }
    return Promise.resolve();
  },
  onCompleted: (job) => process.stdout.write(`completed ${job.jobId}\n`),
});
worker.start();
process.on('SIGTERM', () => void worker.close().then(() => process.exit(0)));
