/**
 * A child process for the crash test: writes jobs to a RocksDB store and
 * prints a line for every write the queue acknowledged, until it is killed.
 * Usage: writer-child.ts <store path> <process|fsync> [inline|thread]
 * (`thread`: every batch written on the store's write thread; by default the small ones are inline).
 */
import { makeConfig } from '../../src/core/config.ts';
import { tenantScope } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { RocksJobStore } from '../../src/storage/rocksdb/rocks-store.ts';

const [path, durability, writes = 'inline'] = process.argv.slice(2);
if (path === undefined || (durability !== 'process' && durability !== 'fsync')) {
  throw new Error('usage: writer-child.ts <path> <process|fsync> [inline|thread]');
}
const config = makeConfig({ storage: { path, durability }, retention: { enabled: false } });
const queue = new Queue({
  store: await RocksJobStore.open({
    path,
    durability,
    ...(writes === 'thread' ? { writeThread: true, writeThreadMinOps: 0 } : {}),
  }),
  config,
  services: false,
});
const scope = tenantScope('crash');
// Stdout to a pipe is synchronous on Linux: once a line is written, the parent can read it.
const ack = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
ack('ready');
for (let i = 0; ; i++) {
  // Several writers at once, so acknowledged writes come from shared group commits.
  await Promise.all(
    [0, 1, 2, 3].map(async (w) => {
      const { job } = await queue.enqueue(
        {
          kind: 'crash',
          payload: Buffer.from(`${i}.${w}`),
          idempotencyKey: `k-${i}-${w}`,
        },
        scope,
      );
      ack(`enqueued ${job.jobId}`);
      if (w === 0) {
        const leased = await queue.leaseNext({ workerId: `child-${w}`, kinds: ['crash'], scope });
        if (leased !== null) {
          await queue.complete(leased.jobId, { workerId: `child-${w}`, leaseGeneration: leased.leaseGeneration });
          ack(`completed ${leased.jobId}`);
        }
      }
    }),
  );
}
