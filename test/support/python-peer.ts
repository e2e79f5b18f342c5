/**
 * The TypeScript side of the Python SDK's cross-language tests (sdk/python/tests/test_cross_language.py),
 * run as `node --import tsx test/support/python-peer.ts <mode> <address> <token> <kind> [payload]`:
 *   produce  enqueues `payload` (JSON) in tenant `acme`, prints the job id, then prints the
 *            job's result as JSON once a worker (the Python one) has completed it;
 *   work     works `kind` with a TS Worker whose handler returns `{ "worker": "ts", "payload": ... }`,
 *            prints `ready` once its Work stream is open, and closes when stdin ends.
 */
import { once } from 'node:events';
import { TelhaClient, Worker, silentLogger, tenantScope } from '../../src/client/index.ts';

const [mode, address, token, kind, payload] = process.argv.slice(2);
if (address === undefined || token === undefined || kind === undefined) {
  throw new Error('usage: python-peer.ts produce|work <address> <token> <kind> [payload]');
}

if (mode === 'produce') {
  const client = new TelhaClient({ address, token });
  const { job } = await client.enqueue({ kind, payload: payload ?? 'null' }, tenantScope('acme'));
  process.stdout.write(`${job.jobId}\n`);
  const outcome = await client.result(job.jobId);
  process.stdout.write(`${JSON.stringify(outcome.json())}\n`);
  client.close();
} else if (mode === 'work') {
  const worker = new Worker({
    address,
    token,
    kinds: [kind],
    logger: silentLogger,
    handler: (job) =>
      Promise.resolve({ worker: 'ts', payload: JSON.parse(new TextDecoder().decode(job.payload)) as unknown }),
  });
  worker.start();
  await worker.waitForReady();
  process.stdout.write('ready\n');
  process.stdin.resume();
  await once(process.stdin, 'end');
  await worker.close();
} else {
  throw new Error(`unknown mode ${String(mode)}`);
}
