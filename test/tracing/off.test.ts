/**
 * Traces off: with no OpenTelemetry SDK registered (this file registers none, and node:test runs
 * each file in its own process), enqueues carry no trace context and a job's record holds no
 * trace field, so its bytes are what they were before traces existed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TelhaClient } from '../../src/client/client.ts';
import { encodeRecord } from '../../src/codec/value.ts';
import { tenantScope } from '../../src/core/types.ts';
import { LocalWorker } from '../../src/engine/worker.ts';
import { liveServer } from '../support/server.ts';

const acme = tenantScope('acme');

describe('traces off', () => {
  const live = liveServer();

  it('enqueues through the client and the engine with no trace context and no trace field in the record', async () => {
    const client: TelhaClient = live.client;
    const { job: remote } = await client.enqueue({ kind: 'untraced' }, acme);
    const { job: local } = await live.server.queue.enqueue({ kind: 'untraced' }, acme);
    for (const jobId of [remote.jobId, local.jobId]) {
      const stored = await live.server.queue.show(jobId);
      assert.equal(stored.traceContext, null);
      assert.equal(encodeRecord(stored).includes('traceparent'), false);
    }
  });

  it('passes a job’s own trace context on to the successors its attempt chains, and adds none to one without', async () => {
    const queue = live.server.queue;
    const traceContext = {
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: 'vendor=1',
    };
    await queue.enqueue({ kind: 'carried', traceContext }, acme);
    await queue.enqueue({ kind: 'bare' }, acme);
    const successors = new Map<string, string>();
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    const worker = new LocalWorker(queue, {
      scope: acme,
      kinds: ['carried', 'bare', 'next-of-carried', 'next-of-bare'],
      handler: (running) => {
        if (!running.kind.startsWith('next-')) running.chain({ kind: `next-of-${running.kind}` });
        return Promise.resolve();
      },
      onCompleted: (record) => {
        if (record.kind.startsWith('next-')) successors.set(record.kind, record.jobId);
        if (successors.size === 2) finish();
      },
    }).start();
    await done;
    await worker.close();
    const carried = await queue.show(successors.get('next-of-carried') ?? '');
    assert.deepEqual(carried.traceContext, traceContext);
    const bare = await queue.show(successors.get('next-of-bare') ?? '');
    assert.equal(bare.traceContext, null);
  });
});
