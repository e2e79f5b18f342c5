/**
 * A child process for the write thread's test: opens a RocksDB store with the write thread, writes
 * through it, prints `written`, and ends its script without closing the store. It must then exit
 * by itself, as a process whose open failed half-way would.
 * Usage: unclosed-store-child.ts <store path>
 */
import { draftJob } from '../../src/core/drafts.ts';
import { newJobId } from '../../src/codec/job-ids.ts';
import { tenantScope } from '../../src/core/types.ts';
import { RocksJobStore } from '../../src/storage/rocksdb/rocks-store.ts';

const [path] = process.argv.slice(2);
if (path === undefined) throw new Error('usage: unclosed-store-child.ts <path>');
const store = await RocksJobStore.open({ path, writeThread: true, writeThreadMinOps: 0 });
const now = Date.now() * 1000;
await store.insert(
  [draftJob(tenantScope('acme'), { kind: 'k' }, { now, fieldPrefix: '', maxPayloadBytes: 1024, jobId: newJobId() })],
  now,
);
process.stdout.write('written\n');
