/**
 * Several queues (one per server, in real deployments) on one PostgreSQL
 * schema, in one process so the test can see each queue's counters: wake-ups
 * cross servers, the reaper and the pruner act once, idempotency keys hold,
 * and a claim's scan never walks past gated rows.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ManualClock, type Clock } from '../../src/core/clock.ts';
import { ANY_SCOPE, JobState, SYSTEM_SCOPE, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { enqueueInTransaction } from '../../src/storage/postgres/transactional.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { pgSchema } from '../../src/storage/postgres/connection.ts';
import { claimQuery } from '../../src/storage/postgres/sql/claims.ts';
import { testConfig } from '../../src/testing/conformance/harness.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { parked } from '../support/events.ts';
import { jobScans } from '../support/pg-plans.ts';
import { eventually } from '../support/server.ts';

const acme = tenantScope('acme');
/** Longer than any wait here, so a fallback poll cannot pass for a notification. */
const NEVER_POLL_MS = 600_000;
/** How long a parked lease call waits: a lost notification fails the test after this, it does not hang it. */
const PARK_MS = 20_000;

interface Servers {
  readonly queues: Queue[];
  readonly stores: PostgresJobStore[];
  readonly close: () => Promise<void>;
}

/** `n` queues, each on its own store (pool and listener) over one schema. */
async function servers(
  n: number,
  options: { clock?: Clock; pollIntervalMs?: number; config?: Parameters<typeof testConfig>[0] } = {},
): Promise<Servers> {
  const schema = uniqueSchema('shared');
  const stores: PostgresJobStore[] = [];
  const queues: Queue[] = [];
  for (let i = 0; i < n; i++) {
    const store = await PostgresJobStore.open({
      url: TEST_PG_URL,
      schema,
      poolSize: 4,
      pollIntervalMs: options.pollIntervalMs ?? NEVER_POLL_MS,
    });
    stores.push(store);
    queues.push(
      new Queue({
        store,
        config: testConfig(options.config),
        services: false,
        ...(options.clock ? { clock: options.clock } : {}),
      }),
    );
  }
  return {
    queues,
    stores,
    close: async () => {
      await Promise.all(queues.map((q) => q.close()));
      await dropTestSchema(schema);
    },
  };
}

function only<T>(items: readonly T[]): T {
  assert.equal(items.length, 1);
  return items[0] as T;
}

describe('queues sharing one PostgreSQL schema', () => {
  it('wakes a lease call parked on one server when another server enqueues', async () => {
    const { queues, close } = await servers(2);
    const [a, b] = queues as [Queue, Queue];
    try {
      const waiting = parked(a);
      const lease = a.lease({ workerId: 'wa', scope: acme, limit: 1, waitMs: PARK_MS });
      await waiting;
      const { job } = await b.enqueue({ kind: 'email' }, acme);
      const leased = only(await lease);
      assert.equal(leased.jobId, job.jobId);
      assert.deepEqual(a.waits.ended, { woken: 1, timeout: 0, aborted: 0 });
    } finally {
      await close();
    }
  });

  it('wakes only waiters whose scope and kinds match, one per ready job', async () => {
    const { queues, close } = await servers(2);
    const [a, b] = queues as [Queue, Queue];
    try {
      const controller = new AbortController();
      const waiting = parked(a, 4);
      const otherTenant = a.lease({
        workerId: 'w0',
        scope: tenantScope('other'),
        limit: 1,
        waitMs: PARK_MS,
        signal: controller.signal,
      });
      const otherKind = a.lease({
        workerId: 'w1',
        kinds: ['sms'],
        scope: acme,
        limit: 1,
        waitMs: PARK_MS,
        signal: controller.signal,
      });
      const matching = [
        a.lease({
          workerId: 'w2',
          kinds: ['email'],
          scope: acme,
          limit: 1,
          waitMs: PARK_MS,
          signal: controller.signal,
        }),
        a.lease({ workerId: 'w3', scope: acme, limit: 1, waitMs: PARK_MS, signal: controller.signal }),
      ];
      await waiting;
      await b.enqueue({ kind: 'email' }, acme);
      const woken = only(await Promise.race(matching));
      assert.equal(woken.kind, 'email');
      // One job woke one waiter: the other matching one is still parked.
      assert.equal(a.waits.parked, 3);
      controller.abort();
      const ended = await Promise.all([otherTenant, otherKind, ...matching]);
      assert.deepEqual(ended.map((jobs) => jobs.length).sort(), [0, 0, 0, 1]);
      assert.equal(a.waits.ended.woken, 1);
    } finally {
      await close();
    }
  });

  it("wakes parked lease calls when an application's transaction commits", async () => {
    const { queues, stores, close } = await servers(1);
    const queue = queues[0] as Queue;
    const app = new pg.Client({ connectionString: TEST_PG_URL });
    await app.connect();
    try {
      const waiting = parked(queue);
      const lease = queue.lease({ workerId: 'w', scope: acme, limit: 1, waitMs: PARK_MS });
      await waiting;
      await app.query('BEGIN');
      const [result] = await enqueueInTransaction(app, [{ kind: 'invoice' }], acme, { schema: schemaOf(stores[0]) });
      await app.query('COMMIT');
      assert.equal(only(await lease).jobId, result?.job.jobId);
      assert.deepEqual(queue.waits.ended, { woken: 1, timeout: 0, aborted: 0 });
    } finally {
      await app.end();
      await close();
    }
  });

  it('falls back to polling while its listener is down, and listens again', async () => {
    const { queues, stores, close } = await servers(2, { pollIntervalMs: 200 });
    const [a, b] = queues as [Queue, Queue];
    const store = stores[0] as PostgresJobStore;
    const admin = new pg.Client({ connectionString: TEST_PG_URL });
    await admin.connect();
    try {
      const pid = store.listenerPid;
      assert.ok(pid !== null);
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      // The store tells no one when its listening connection drops or comes back: poll it.
      await eventually(() => Promise.resolve(!store.listening), 'the listener to notice');
      // Nobody hears this notification; the waiter still finds the job by looking again.
      const { job } = await b.enqueue({ kind: 'during-outage' }, acme);
      assert.equal(only(await a.lease({ workerId: 'w', scope: acme, limit: 1, waitMs: 60_000 })).jobId, job.jobId);

      await eventually(
        () => Promise.resolve(store.listening && store.listenerPid !== pid),
        'the listener to reconnect',
      );
      const before = a.waits.ended.woken;
      const parked = a.lease({ workerId: 'w', scope: acme, limit: 1, waitMs: 60_000 });
      const { job: next } = await b.enqueue({ kind: 'after-outage' }, acme);
      assert.equal(only(await parked).jobId, next.jobId);
      assert.ok(a.waits.ended.woken >= before, 'woken by the notification or the poll, never lost');
    } finally {
      await admin.end();
      await close();
    }
  });

  it('reaps an expired lease once, however many servers run the reaper at the same moment', async () => {
    const clock = new ManualClock();
    const { queues, close } = await servers(3, { clock, config: { jobs: { lease_ttl_secs: 10 } } });
    const [a] = queues as [Queue];
    try {
      await a.enqueueBatch(
        Array.from({ length: 150 }, (_, i) => ({ kind: 'work', payload: Buffer.from(String(i)) })),
        acme,
      );
      const leased = await a.lease({ workerId: 'doomed', scope: acme, limit: 1_000 });
      assert.equal(leased.length, 150);
      clock.advanceSeconds(11);
      const passes = await Promise.all(queues.map((q) => q.maintenance.reapExpired()));
      assert.equal(
        passes.reduce((sum, p) => sum + p.reaped, 0),
        150,
      );
      for (const job of leased) {
        const after = await a.show(job.jobId);
        assert.equal(after.state, JobState.Pending);
        assert.equal(after.attempts, 1, `attempts of ${job.jobId} moved once`);
        assert.equal(after.events.filter((e) => e.transition === 'reaped').length, 1);
      }
    } finally {
      await close();
    }
  });

  it('prunes each finished job once when every server prunes at the same moment', async () => {
    const clock = new ManualClock();
    const { queues, close } = await servers(3, { clock, config: { retention: { completed_secs: 60 } } });
    const [a] = queues as [Queue];
    try {
      await a.enqueueBatch(
        Array.from({ length: 120 }, () => ({ kind: 'done' })),
        acme,
      );
      for (const job of await a.lease({ workerId: 'w', scope: acme, limit: 1_000 }))
        await a.complete(job.jobId, { workerId: 'w', leaseGeneration: job.leaseGeneration });
      clock.advanceSeconds(61);
      const pruned = await Promise.all(queues.map((q) => q.maintenance.prune()));
      assert.equal(
        pruned.reduce((sum, n) => sum + n, 0),
        120,
      );
      assert.deepEqual(await a.counts(acme), []);
    } finally {
      await close();
    }
  });

  it('creates one job per idempotency key when servers race the same keys', async () => {
    const { queues, close } = await servers(3);
    try {
      const keys = Array.from({ length: 30 }, (_, i) => `order-${i}`);
      const results = await Promise.all(
        queues.flatMap((q) => keys.map((key) => q.enqueue({ kind: 'charge', idempotencyKey: key }, acme))),
      );
      for (const key of keys) {
        const forKey = results.filter((r) => r.job.idempotencyKey === key);
        assert.equal(forKey.length, 3);
        assert.equal(forKey.filter((r) => r.created).length, 1, `one created job for ${key}`);
        assert.equal(new Set(forKey.map((r) => r.job.jobId)).size, 1, `one job id for ${key}`);
      }
      const counts = await (queues[0] as Queue).counts(acme);
      assert.deepEqual(counts, [{ state: JobState.Pending, kind: 'charge', count: keys.length }]);
    } finally {
      await close();
    }
  });

  it('leaves exactly one pending job per supersede key when servers race the same keys', async () => {
    const { queues, close } = await servers(3);
    try {
      const keys = Array.from({ length: 10 }, (_, i) => `doc-${i}`);
      const results = await Promise.all(
        queues.flatMap((q) =>
          [1, 2, 3].flatMap((v) =>
            keys.map((key) => q.enqueue({ kind: 'sync', payload: `${v}`, supersedeKey: key }, acme)),
          ),
        ),
      );
      for (const key of keys) {
        const stored = await Promise.all(
          results.filter((r) => r.job.supersedeKey === key).map((r) => (queues[0] as Queue).show(r.job.jobId)),
        );
        assert.equal(stored.length, 9);
        const pending = stored.filter((j) => j.state === JobState.Pending);
        assert.equal(pending.length, 1, `one pending job for ${key}`);
        // Every other job names a successor that exists: the replacements form one chain.
        for (const job of stored) {
          if (job.state === JobState.Cancelled) assert.ok(stored.some((j) => j.jobId === job.supersededBy));
        }
      }
    } finally {
      await close();
    }
  });

  it('never runs two jobs of an ordered key at once across servers, and runs each key in enqueue order', async () => {
    const { queues, close } = await servers(3);
    try {
      const keys = Array.from({ length: 5 }, (_, i) => `account-${i}`);
      // Every server enqueues to every key at once, each server its own jobs of a key one after
      // another: the lines form across servers, each server's jobs in its order.
      const enqueued = (
        await Promise.all(
          queues.flatMap((q, server) =>
            keys.map(async (key) => {
              const mine: JobRecord[] = [];
              for (let n = 0; n < 4; n++) {
                mine.push((await q.enqueue({ kind: 'ledger', payload: `${server}.${n}`, orderKey: key }, acme)).job);
              }
              return mine;
            }),
          ),
        )
      ).flat();
      const total = enqueued.length;
      const running = new Map<string, string>();
      const ran = new Map<string, string[]>();
      let done = 0;
      const stop = new AbortController();
      await Promise.all(
        queues.map(async (q, server) => {
          while (done < total) {
            const jobs = await q.lease({
              workerId: `w${server}`,
              scope: acme,
              limit: 10,
              waitMs: PARK_MS,
              signal: stop.signal,
            });
            for (const job of jobs) {
              const key = job.orderKey as string;
              assert.equal(running.get(key), undefined, `two jobs of ${key} leased at once`);
              running.set(key, job.jobId);
            }
            await Promise.all(
              jobs.map(async (job) => {
                const key = job.orderKey as string;
                ran.set(key, [...(ran.get(key) ?? []), job.jobId]);
                // Off the running set before the completion commits: only its commit lets the next run.
                running.delete(key);
                await q.complete(job.jobId, { workerId: `w${server}`, leaseGeneration: job.leaseGeneration });
                done++;
              }),
            );
          }
          stop.abort();
        }),
      );
      for (const key of keys) {
        const order = ran.get(key) ?? [];
        assert.equal(order.length, 12, `every job of ${key} ran once`);
        // Each job after the first ran on its turn after the one before it, and no other.
        for (const [i, jobId] of order.entries()) {
          const promoted = (await (queues[0] as Queue).show(jobId)).events.find((e) => e.transition === 'promoted');
          if (i === 0) assert.equal(promoted, undefined, `the first job of ${key} never waited`);
          else assert.equal(promoted?.detail, `order_key=${key} after=${order[i - 1] ?? ''}`);
        }
        // A server's own enqueues of a key ran in the order it made them.
        for (const server of [0, 1, 2]) {
          const mine = enqueued.filter(
            (j) => j.orderKey === key && Buffer.from(j.payload).toString().startsWith(`${server}.`),
          );
          assert.deepEqual(
            order.filter((id) => mine.some((j) => j.jobId === id)),
            mine.map((j) => j.jobId),
          );
        }
      }
      assert.deepEqual(await (queues[0] as Queue).blockedKeys(acme), []);
    } finally {
      await close();
    }
  });

  describe('the claim scan', () => {
    const clock = new ManualClock();
    let shared: Servers;
    let queue: Queue;
    let ready: JobRecord;
    let table: string;
    const GATED = 3_000;
    const SYSTEM_READY = 1_000;

    /** The scans of the jobs table in the claim's plan: index, rows found, rows read and dropped by a filter. */
    function claimScans(query: { text: string; values: unknown[] }): Promise<unknown[]> {
      return jobScans(table, { text: query.text, values: [1, ...query.values] });
    }

    before(async () => {
      shared = await servers(1, { clock });
      queue = shared.queues[0] as Queue;
      table = pgSchema(schemaOf(shared.stores[0])).table;
      // Ready system jobs sort ahead of every tenant's.
      await queue.enqueueBatch(
        Array.from({ length: SYSTEM_READY }, () => ({ kind: 'system:compact' })),
        SYSTEM_SCOPE,
      );
      // Gated rows first, so they come before the ready job in key order.
      for (let i = 0; i < GATED; i += 1_000)
        await queue.enqueueBatch(
          Array.from({ length: 1_000 }, () => ({ kind: 'later', delayMs: 3_600_000 })),
          acme,
        );
      ready = only(await queue.enqueueBatch([{ kind: 'now' }], acme)).job;
    });
    after(() => shared.close());

    it('finds ready work through the ready index without reading a gated row', async () => {
      assert.deepEqual(await claimScans(claimQuery(table, acme, null)), [['jobs_ready', 1, 0]]);
      assert.equal((await queue.leaseNext({ workerId: 'w', scope: acme }))?.jobId, ready.jobId);
    });

    it('starts a catch-all claim on every scope past the system jobs, without reading one', async () => {
      const elsewhere = only(await queue.enqueueBatch([{ kind: 'now' }], tenantScope('globex'))).job;
      assert.deepEqual(await claimScans(claimQuery(table, ANY_SCOPE, null)), [['jobs_ready', 1, 0]]);
      assert.equal((await queue.leaseNext({ workerId: 'w' }))?.jobId, elsewhere.jobId);
      assert.equal((await queue.counts(SYSTEM_SCOPE))[0]?.count, SYSTEM_READY, 'the system jobs wait');
    });

    it('opens due gates at the next claim, oldest job first', async () => {
      clock.advanceSeconds(3_601);
      const leased = await queue.lease({ workerId: 'w', scope: acme, limit: 5 });
      const expected = (await queue.list({ scope: acme, state: JobState.Pending, limit: 5 })).jobs;
      assert.equal(leased.length, 5);
      assert.ok(leased.every((j) => j.kind === 'later'));
      assert.ok(expected.every((j) => !leased.some((l) => l.jobId === j.jobId)));
      const createdAt = leased.map((j) => j.createdAt);
      assert.deepEqual(
        createdAt,
        [...createdAt].sort((x, y) => x - y),
      );
      assert.ok((expected[0]?.createdAt ?? Infinity) > (createdAt[4] ?? 0), 'FIFO: nothing older was skipped');
    });
  });
});

/** The schema name a test store was opened with. */
function schemaOf(store: PostgresJobStore | undefined): string {
  assert.ok(store);
  return store.schemaName;
}
