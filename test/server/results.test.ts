/**
 * Results and progress end to end: what a handler returns and reports through `job.progress()`
 * reaches `client.show()` over a live server (the Work stream's completes, unary heartbeats),
 * and the same through a worker on a queue in this process.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { resultJson } from '../../src/client/index.ts';
import { Worker } from '../../src/client/worker.ts';
import { OffsetClock } from '../../src/core/clock.ts';
import { makeConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { LocalWorker } from '../../src/engine/worker.ts';
import { openQueue } from '../../src/open.ts';
import { written } from '../support/events.ts';
import { liveServerPerTest } from '../support/server.ts';

const acme = tenantScope('acme');

describe('results and progress through the SDK and a live server', () => {
  let worker: Worker | null = null;

  afterEach(async () => {
    await worker?.close(1_000);
    worker = null;
  });
  // After the hook above, so each test's worker has stopped before its server closes.
  const { server, client } = liveServerPerTest({ jobs: { max_result_bytes: 64 }, server: { http_address: '' } });

  it('stores what a handler returns as its result, and what it reports as its progress', async () => {
    const { job } = await client.enqueue({ kind: 'report' }, acme);
    const done = written(server.queue, 'the completion', (r) => r.jobId === job.jobId && r.state !== JobState.Leased);
    worker = new Worker({
      address: server.address,
      kinds: ['report'],
      logger: silentLogger,
      handler: async (ctx) => {
        await ctx.progress({ done: 2, of: 3 });
        return { rows: 3, file: 'out.csv' };
      },
    }).start();
    await done;
    const shown = await client.show(job.jobId);
    assert.equal(shown.state, JobState.Completed);
    assert.deepEqual(resultJson(shown), { rows: 3, file: 'out.csv' });
    assert.equal(shown.progress, '{"done":2,"of":3}');
    assert.deepEqual(
      shown.events.map((e) => e.transition),
      ['enqueued', 'leased', 'progress', 'completed'],
    );
  });

  it('stores bytes as they are, no result for undefined, and JSON for a plain value', async () => {
    const returns: Record<string, unknown> = {
      'r.bytes': new Uint8Array([0xff, 0x00, 0x01]),
      'r.none': undefined,
      'r.number': 42,
    };
    const ids = new Map<string, string>();
    for (const kind of Object.keys(returns)) ids.set(kind, (await client.enqueue({ kind }, acme)).job.jobId);
    const done = written(server.queue, 'three completions', (r) => r.state === JobState.Completed, 3);
    worker = new Worker({
      address: server.address,
      kinds: ['r.'],
      logger: silentLogger,
      handler: (ctx) => Promise.resolve(returns[ctx.kind]),
    }).start();
    await done;
    const show = (kind: string): Promise<{ result: Uint8Array | null }> => client.show(ids.get(kind) ?? '');
    assert.deepEqual([...((await show('r.bytes')).result ?? [])], [0xff, 0x00, 0x01]);
    assert.throws(() => resultJson({ result: new Uint8Array([0xff]) }), TypeError);
    assert.equal((await show('r.none')).result, null);
    assert.equal(resultJson(await show('r.none')), undefined);
    assert.equal(resultJson(await show('r.number')), 42);
  });

  it('fails the attempt, with the reason in its trail, when the server refuses its result as too big', async () => {
    const { job } = await client.enqueue({ kind: 'big' }, acme);
    const failed = written(server.queue, 'the failure', (r) => r.jobId === job.jobId && r.attempts === 1);
    worker = new Worker({
      address: server.address,
      kinds: ['big'],
      logger: silentLogger,
      handler: () => Promise.resolve('x'.repeat(100)),
    }).start();
    await failed;
    const shown = await client.show(job.jobId);
    assert.equal(shown.result, null);
    const failure = shown.events.find((e) => e.transition === 'failed');
    assert.match(failure?.detail ?? '', /result: is 102 bytes, over the limit of 64/);
  });

  it('refuses progress that is not small JSON over the wire, naming progress', async () => {
    await client.enqueue({ kind: 'p' }, acme);
    const [leased] = await client.lease({ workerId: 'w1', kinds: ['p'] });
    assert.ok(leased);
    const fence = { workerId: 'w1', leaseGeneration: leased.leaseGeneration };
    await assert.rejects(client.heartbeat(leased.jobId, fence, { progress: 'not json' }), (e: unknown) => {
      assert.equal((e as { field?: string }).field, 'progress');
      return true;
    });
    await client.heartbeat(leased.jobId, fence, { progress: '0.5' });
    const { job } = await client.complete(leased.jobId, fence, { result: new TextEncoder().encode('"ok"') });
    assert.equal(job.progress, '0.5');
    assert.equal(resultJson(job), 'ok');
  });
});

describe('results and progress through a worker in this process', () => {
  it('stores what the handler returns and reports, as the SDK worker does', async () => {
    const queue = await openQueue({
      config: makeConfig({ retention: { enabled: false } }),
      clock: new OffsetClock(),
      services: false,
      inMemory: true,
    });
    const { job } = await queue.enqueue({ kind: 'local' }, acme);
    const done = written(queue, 'the completion', (r) => r.jobId === job.jobId && r.state === JobState.Completed);
    const worker = new LocalWorker(queue, {
      kinds: ['local'],
      handler: async (ctx) => {
        await ctx.progress(0.5);
        return ['a', 'b'];
      },
    }).start();
    await done;
    await worker.close(1_000);
    const shown = await queue.show(job.jobId);
    assert.deepEqual(resultJson(shown), ['a', 'b']);
    assert.equal(shown.progress, '0.5');
    await queue.close();
  });
});
