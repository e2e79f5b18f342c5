/**
 * Log notifications only while someone reads: a server tells the others of its transitions
 * (so their watchers look at the log again) only once some other server has said its readers
 * follow the log; a server that starts listening asks, and hears of the readers already there.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ManualClock } from '../../src/core/clock.ts';
import { tenantScope } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { fenceOf, testConfig } from '../../src/testing/conformance/harness.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { eventually } from '../support/server.ts';

const acme = tenantScope('acme');

describe('log notifications (PostgreSQL)', () => {
  const schema = uniqueSchema('notices');
  const opened: { store: PostgresJobStore; queue: Queue }[] = [];
  /** A server's store and queue on the shared schema; readers look again only when told (no poll within the test). */
  async function server(): Promise<{ store: PostgresJobStore; queue: Queue }> {
    const store = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 2, pollIntervalMs: 600_000 });
    const queue = new Queue({ store, config: testConfig(), clock: new ManualClock(), services: false });
    opened.push({ store, queue });
    return { store, queue };
  }
  /** Enqueue, lease and complete one job through `queue`: three logged transitions. */
  async function work(queue: Queue, tag: string): Promise<void> {
    await queue.enqueue({ kind: 'k', payload: tag }, acme);
    const [job] = await queue.lease({ workerId: 'w', scope: acme, limit: 1 });
    assert.ok(job !== undefined);
    await queue.complete(job.jobId, fenceOf(job));
  }
  after(async () => {
    for (const { queue } of opened) await queue.close();
    await dropTestSchema(schema);
  });

  it(
    'sends none while nobody follows, and wakes a reader on another server once one does',
    { timeout: 120_000 },
    async () => {
      const a = await server();
      const b = await server();
      await work(a.queue, 'unread');
      assert.equal(a.store.logNoticesSent, 0);
      assert.equal(a.store.followedElsewhere, false);

      // A reader on B: B says so, and A, once it has heard, tells of its transitions.
      let woken!: () => void;
      const told = new Promise<void>((resolve) => (woken = resolve));
      const stop = b.queue.feed.subscribe(() => woken());
      await eventually(() => Promise.resolve(a.store.followedElsewhere), 'A to hear that B has a reader');
      await work(a.queue, 'read');
      assert.ok(a.store.logNoticesSent > 0);
      // Only A's notification can wake it: B's poll interval is ten minutes, and B made no transition.
      await told;
      // Nobody follows on A: B's own transitions go untold.
      await work(b.queue, 'unread on A');
      assert.equal(b.store.logNoticesSent, 0);
      stop();
    },
  );

  it('tells a server that starts listening of the readers already following', async () => {
    const b = opened[1] ?? (await server());
    const stop = b.queue.feed.subscribe(() => undefined);
    const c = await server();
    await eventually(() => Promise.resolve(c.store.followedElsewhere), 'C to hear that B has a reader');
    stop();
  });
});
