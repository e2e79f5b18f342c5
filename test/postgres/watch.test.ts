/**
 * Watch across servers sharing one PostgreSQL store: a watcher on one server
 * sees the transitions made through another, and through an application's own
 * transaction, and a token from one server resumes on the other.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { TelhaClient } from '../../src/client/client.ts';
import type { WatchEvent } from '../../src/client/watch.ts';
import { Worker } from '../../src/client/worker.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { tenantScope, type NewJob } from '../../src/core/types.ts';
import { enqueueInTransaction } from '../../src/storage/postgres/transactional.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const acme = tenantScope('acme');
const DRAIN_JOBS = 10_000;

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

function jobsOf(count: number, kind: string): NewJob[] {
  return Array.from({ length: count }, (_, i) => ({ kind, payload: String(i) }));
}

/** Watch until `until` holds; resolves once the server has opened the watch. */
async function watching(
  client: TelhaClient,
  options: Parameters<TelhaClient['watch']>[0] & { until: (seen: WatchEvent[]) => boolean },
): Promise<{ done: Promise<WatchEvent[]> }> {
  const opened = deferred();
  const { until, ...watch } = options;
  const done = (async () => {
    const seen: WatchEvent[] = [];
    for await (const event of client.watch({ ...watch, onOpen: () => opened.resolve() })) {
      seen.push(event);
      if (until(seen)) break;
    }
    return seen;
  })();
  done.catch(() => undefined);
  await Promise.race([opened.promise, done]);
  return { done };
}

const key = (e: WatchEvent): string => `${e.sequence} ${e.job.jobId} ${e.transition}`;

describe('Watch on two servers sharing one PostgreSQL store', () => {
  const schema = uniqueSchema('watch');
  let a: TestServer;
  let b: TestServer;
  let onA: TelhaClient;
  let onB: TelhaClient;
  before(async () => {
    const values = { storage: { kind: 'postgres', url: TEST_PG_URL, schema }, server: { http_address: '' } };
    a = await startTestServer(values);
    b = await startTestServer(values);
    onA = new TelhaClient({ address: a.address });
    onB = new TelhaClient({ address: b.address });
  });
  after(async () => {
    onA.close();
    onB.close();
    await a.close();
    await b.close();
    await dropTestSchema(schema);
  });

  it('delivers on A every transition of a 10,000-job drain worked through B, once, and resumes on B with the rest', async () => {
    const whole = await watching(onA, { kindPrefix: 'drain', until: (seen) => seen.length === 3 * DRAIN_JOBS });
    const head = await watching(onA, { kindPrefix: 'drain', until: (seen) => seen.length === DRAIN_JOBS });
    const worker = new Worker({
      address: b.address,
      kinds: ['drain'],
      concurrency: 64,
      logger: silentLogger,
      handler: () => Promise.resolve(),
    }).start();
    for (let i = 0; i < DRAIN_JOBS; i += 1_000) await onB.enqueueBatch(jobsOf(1_000, 'drain'), acme);
    const first = await head.done;
    const rest = await watching(onB, {
      kindPrefix: 'drain',
      resumeToken: (first[first.length - 1] as WatchEvent).resumeToken,
      until: (seen) => first.length + seen.length === 3 * DRAIN_JOBS,
    });
    const events = await whole.done;
    const resumed = await rest.done;
    await worker.close();

    assert.equal(events.length, 3 * DRAIN_JOBS);
    const byJob = new Map<string, string[]>();
    for (const event of events) byJob.set(event.job.jobId, [...(byJob.get(event.job.jobId) ?? []), event.transition]);
    assert.equal(byJob.size, DRAIN_JOBS);
    for (const transitions of byJob.values()) assert.deepEqual(transitions, ['enqueued', 'leased', 'completed']);
    // Every reader of the log reads it in the same order: the watcher that moved from A to B saw
    // exactly what the one that stayed on A saw.
    assert.deepEqual([...first, ...resumed].map(key), events.map(key));
  });

  it('shows a watcher on A the jobs an application enqueued in its own transaction, once it commits', async () => {
    const watch = await watching(onA, { kindPrefix: 'app', until: (seen) => seen.length === 2 });
    const app = new pg.Client({ connectionString: TEST_PG_URL });
    await app.connect();
    try {
      await app.query('BEGIN');
      await enqueueInTransaction(app, [{ kind: 'app.rolled-back' }], acme, { schema });
      await app.query('ROLLBACK');
      await app.query('BEGIN');
      await enqueueInTransaction(app, [{ kind: 'app.one' }, { kind: 'app.two' }], acme, { schema });
      await app.query('COMMIT');
    } finally {
      await app.end();
    }
    assert.deepEqual(
      (await watch.done).map((e) => [e.job.kind, e.transition]),
      [
        ['app.one', 'enqueued'],
        ['app.two', 'enqueued'],
      ],
    );
  });
});
