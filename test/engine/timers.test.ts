/**
 * The longest settings the loader accepts never set a timer longer than Node's limit
 * (2^31 - 1 ms): Node fires such a timer after 1 ms instead, with a TimeoutOverflowWarning,
 * which would turn a ten-year lease's heartbeat, or a long lease wait, into a busy loop.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeConfig } from '../../src/core/config.ts';
import { tenantScope } from '../../src/core/types.ts';
import type { Queue } from '../../src/engine/queue.ts';
import { LocalWorker } from '../../src/engine/worker.ts';
import { openQueue } from '../../src/open.ts';

const acme = tenantScope('acme');

describe('timers under the longest settings', () => {
  let queue: Queue;
  const overflows: string[] = [];
  const onWarning = (warning: Error): void => {
    if (warning.name === 'TimeoutOverflowWarning') overflows.push(warning.message);
  };
  /** Warnings are emitted on a later tick than the timer that caused them. */
  const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  before(async () => {
    process.on('warning', onWarning);
    const config = makeConfig({ jobs: { lease_ttl_secs: 315_360_000 }, retention: { enabled: false } });
    queue = await openQueue({ config, services: false, inMemory: true });
  });
  after(async () => {
    process.off('warning', onWarning);
    await queue.close();
  });

  it('heartbeats a ten-year lease without overflowing the timer', async () => {
    await queue.enqueue({ kind: 'long' }, acme);
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const worker = new LocalWorker(queue, {
      handler: async () => {
        started();
        await finished;
      },
    }).start();
    // The heartbeat timer is set when the job is leased, before its handler runs.
    await running;
    await settled();
    finish();
    await worker.close();
    assert.deepEqual(overflows, []);
  });

  it('parks an in-process lease call of any wait without overflowing the timer', async () => {
    const abort = new AbortController();
    const parked = queue.lease({ workerId: 'w', kinds: ['none'], scope: acme, waitMs: 1e12, signal: abort.signal });
    while (queue.waits.parked === 0) await settled();
    await settled();
    abort.abort();
    assert.deepEqual(await parked, []);
    assert.deepEqual(overflows, []);
  });
});
