/**
 * Two `telha serve` servers on one PostgreSQL schema, in this process on real
 * sockets, drained by SDK workers while PostgreSQL takes their connections
 * away: every backend of theirs terminated, several times (what a failover or
 * `idle_session_timeout` does), and a whole cluster stopped and started again
 * (a private throwaway cluster, so the shared one other runs use is never
 * touched). Through it all: no crash, no INTERNAL, every job completed
 * exactly once, every acknowledged enqueue and completion kept.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { TelhaClient } from '../../src/client/client.ts';
import { Worker } from '../../src/client/worker.ts';
import { makeConfig } from '../../src/core/config.ts';
import { ErrorCode, isTelhaError } from '../../src/core/errors.ts';
import type { Logger } from '../../src/core/logger.ts';
import { JobState, tenantScope, type NewJob } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { startServer } from '../../src/serve/server.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';
import { PgCluster } from '../support/pg-cluster.ts';
import { allJobs, eventually } from '../support/server.ts';

const acme = tenantScope('acme');
/** Enqueued before the workers start. */
const UP_FRONT = 2_000;
/** Enqueued with idempotency keys while the faults happen, in batches of `KEYED_BATCH`. */
const KEYED = 1_000;
const KEYED_BATCH = 100;
const JOBS = UP_FRONT + KEYED;

/** Every error-level line the servers log; a call answered INTERNAL logs one of these messages. */
class Capture implements Logger {
  readonly errors: { message: string; fields: object }[] = [];
  debug(): void {}
  info(): void {}
  warn(): void {}
  error(fields: object, message: string): void {
    this.errors.push({ message, fields });
  }
  get internal(): { message: string; fields: object }[] {
    return this.errors.filter((e) => e.message === 'internal error' || e.message === 'request failed');
  }
}

interface Served {
  readonly address: string;
  readonly queue: Queue;
  readonly store: PostgresJobStore;
  close(): Promise<void>;
}

/** A server as `telha serve` runs it (reaper on), over a store of its own on `url`'s `schema`. */
async function serve(url: string, schema: string, logger: Logger): Promise<Served> {
  const config = makeConfig({
    storage: { kind: 'postgres', url, schema, poll_interval_ms: 200 },
    jobs: { lease_ttl_secs: 2, reaper_interval_secs: 1, backoff_base_secs: 0 },
    retention: { enabled: false },
    server: { address: '127.0.0.1:0', http_address: '', shutdown_grace_ms: 1_000 },
  });
  const store = await PostgresJobStore.open({ url, schema, poolSize: 4, pollIntervalMs: 200, logger });
  const queue = new Queue({ store, config, logger });
  const server = await startServer({ queue, config, logger });
  return {
    address: server.address,
    queue,
    store,
    async close() {
      await server.close();
      await queue.close();
    },
  };
}

/** Call `call` until it is answered, waiting out UNAVAILABLE as a producer would. */
async function untilAnswered<T>(call: () => Promise<T>): Promise<T> {
  for (let pause = 50; ; pause = Math.min(1_000, pause * 2)) {
    try {
      return await call();
    } catch (error) {
      if (!isTelhaError(error, ErrorCode.Unavailable)) throw error;
      // A producer's backoff, not a wait for something this process could be told about.
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/**
 * Drain `JOBS` jobs through two servers on `url` while `fault(n)` strikes at every
 * `faultEvery` acknowledged completions, `faults` times; then check the ledger.
 */
async function drainThroughFaults(options: {
  readonly url: string;
  readonly schema: string;
  readonly faults: number;
  readonly faultEvery: number;
  readonly fault: (n: number, servers: readonly Served[], producer: TelhaClient) => Promise<void>;
}): Promise<void> {
  const { url, schema } = options;
  const uncaught: unknown[] = [];
  const trap = (error: unknown): void => void uncaught.push(error);
  process.on('uncaughtException', trap);
  process.on('unhandledRejection', trap);
  const logger = new Capture();
  const servers: Served[] = [];
  const workers: Worker[] = [];
  let producer: TelhaClient | null = null;
  try {
    servers.push(await serve(url, schema, logger), await serve(url, schema, logger));
    producer = new TelhaClient({ address: servers[1]!.address, timeoutMs: 5_000 });
    const client = producer;
    const acknowledged = new Set<string>();
    for (let i = 0; i < UP_FRONT; i += 1_000) {
      const jobs = Array.from({ length: 1_000 }, (_, j): NewJob => ({ kind: 'outage', payload: `job ${i + j}` }));
      for (const result of await client.enqueueBatch(jobs, acme)) acknowledged.add(result.job.jobId);
    }

    // Completions the servers acknowledged to a worker, per job.
    const completedAcks = new Map<string, number>();
    let faultsDone = 0;
    let faulting: Promise<void> = Promise.resolve();
    for (let w = 0; w < 4; w++) {
      workers.push(
        new Worker({
          address: servers[w % 2]!.address,
          kinds: ['outage'],
          concurrency: 10,
          timeoutMs: 2_000,
          workerId: `w${w}`,
          handler: () => new Promise((resolve) => setImmediate(resolve)),
          onCompleted: (job) => {
            completedAcks.set(job.jobId, (completedAcks.get(job.jobId) ?? 0) + 1);
            const acks = completedAcks.size;
            if (faultsDone < options.faults && acks >= (faultsDone + 1) * options.faultEvery) {
              const n = ++faultsDone;
              faulting = faulting.then(() => options.fault(n, servers, client));
            }
          },
        }).start(),
      );
    }

    // Keyed enqueues go on through the faults; an UNAVAILABLE batch is sent again with the same keys.
    const keys = new Map<string, string>();
    for (let i = 0; i < KEYED; i += KEYED_BATCH) {
      const jobs = Array.from({ length: KEYED_BATCH }, (_, j): NewJob => ({
        kind: 'outage',
        idempotencyKey: `key-${i + j}`,
        payload: `keyed ${i + j}`,
      }));
      const results = await untilAnswered(() => client.enqueueBatch(jobs, acme));
      for (const [j, result] of results.entries()) {
        const key = `key-${i + j}`;
        assert.equal(keys.get(key) ?? result.job.jobId, result.job.jobId, `key ${key} names one job`);
        keys.set(key, result.job.jobId);
        acknowledged.add(result.job.jobId);
      }
    }

    // Completions whose answer the faults cut off are not acknowledged, so the ledger, not the
    // workers, says when the drain is over; it lives in another database, so look.
    await eventually(
      async () => {
        const counts = await untilAnswered(() => client.counts(acme));
        return counts.length > 0 && counts.every((r) => r.state === JobState.Completed);
      },
      'every job to complete',
      180_000,
    );
    await faulting;
    assert.equal(faultsDone, options.faults, 'every fault struck during the drain');

    const all = await allJobs(client, acme);
    assert.equal(all.length, JOBS, 'nothing lost, nothing duplicated');
    const stored = new Set(all.map((job) => job.jobId));
    for (const id of acknowledged) assert.ok(stored.has(id), `acknowledged job ${id} is kept`);
    for (const job of all) {
      assert.equal(job.state, JobState.Completed);
      assert.equal(job.events.filter((e) => e.transition === 'completed').length, 1, `job ${job.jobId} completed once`);
    }
    for (const [id, acks] of completedAcks) assert.equal(acks, 1, `completion of ${id} accepted once`);
    // Both listeners are back; PostgreSQL gives no signal of a reconnect, so look.
    await eventually(() => Promise.resolve(servers.every((s) => s.store.listening)), 'both listeners to reconnect');
    assert.deepEqual(logger.internal, [], 'no call answered INTERNAL');
    assert.deepEqual(uncaught, [], 'nothing reached the process unhandled');
  } finally {
    await Promise.all(workers.map((w) => w.close(2_000)));
    producer?.close();
    await Promise.all(servers.map((s) => s.close()));
    process.off('uncaughtException', trap);
    process.off('unhandledRejection', trap);
  }
}

describe('telha serve on PostgreSQL while PostgreSQL drops its connections', () => {
  it('completes every job exactly once while every backend of both servers is terminated five times', async () => {
    const schema = uniqueSchema('outage');
    // This run's own name, so the test terminates its servers' backends and nobody else's.
    const applicationName = `telha-outage-${process.pid}`;
    const url = new URL(TEST_PG_URL);
    url.searchParams.set('application_name', applicationName);
    const admin = new pg.Client({ connectionString: TEST_PG_URL });
    await admin.connect();
    try {
      await drainThroughFaults({
        url: url.toString(),
        schema,
        faults: 5,
        faultEvery: 400,
        fault: async () => {
          const { rows } = await admin.query<{ n: number }>(
            `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()`,
            [applicationName],
          );
          // At least the two listeners, which are always connected.
          assert.ok((rows[0]?.n ?? 0) >= 2, `terminated ${rows[0]?.n ?? 0} backends`);
        },
      });
    } finally {
      await admin.end();
      await dropTestSchema(schema);
    }
  });

  describe('on a cluster of its own', () => {
    let cluster: PgCluster;
    before(async () => {
      cluster = await PgCluster.start();
    });
    after(async () => {
      await cluster.destroy();
    });

    it('completes every job exactly once across a stop and start of PostgreSQL, answering UNAVAILABLE while it is down', async () => {
      await drainThroughFaults({
        url: cluster.url,
        schema: 'telha',
        faults: 1,
        faultEvery: 800,
        fault: async (_n, servers, producer) => {
          await cluster.stop();
          for (const server of servers) {
            await assert.rejects(server.queue.health(), (error) => isTelhaError(error, ErrorCode.Unavailable));
          }
          await assert.rejects(producer.counts(acme), (error) => isTelhaError(error, ErrorCode.Unavailable));
          await cluster.start();
          for (const server of servers) await server.queue.health();
        },
      });
    });
  });
});
