/**
 * Listings newest first on PostgreSQL come from indexes, not from sorting the table: the plan of
 * each listing's statement walks `jobs_recent` or `jobs_recent_tenants` and has no Sort.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ManualClock } from '../../src/core/clock.ts';
import type { ListOrder } from '../../src/core/list-order.ts';
import { JobState, SYSTEM_SCOPE, tenantScope, type ScopeFilter } from '../../src/core/types.ts';
import { testConfig } from '../../src/testing/conformance/harness.ts';
import { Queue } from '../../src/engine/queue.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { listSql } from '../../src/storage/postgres/sql/list.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';

const TENANTS = 20;
const JOBS_PER_TENANT = 400;

describe('PostgreSQL listings', () => {
  const schema = uniqueSchema('listorder');
  const clock = new ManualClock(1_700_000_000_000_000);
  let queue: Queue;
  let client: pg.Client;

  before(async () => {
    const store = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 2 });
    queue = new Queue({ store, config: testConfig(), clock, services: false });
    for (let t = 0; t < TENANTS; t++) {
      const jobs = Array.from({ length: JOBS_PER_TENANT }, (_, i) => ({ kind: `k${i % 3}`, priority: i % 4 }));
      await queue.enqueueBatch(jobs, tenantScope(`tenant-${t}`));
      await queue.enqueue({ kind: 'system:test' }, SYSTEM_SCOPE);
      clock.advanceSeconds(1);
    }
    client = new pg.Client({ connectionString: TEST_PG_URL });
    await client.connect();
    await client.query(`ANALYZE "${schema}".jobs`);
  });

  after(async () => {
    await client.end();
    await queue.close();
    await dropTestSchema(schema);
  });

  async function plan(
    scope: ScopeFilter,
    state: JobState | null,
    order: ListOrder,
    includeSystem = false,
  ): Promise<string> {
    const query = { scope, state, kindPrefix: null, limit: 50, pageToken: null, order, includeSystem };
    const { text, args } = listSql(`"${schema}"`, query, {
      createdAt: clock.now(),
      jobId: 'ffffffff-ffff-7fff-bfff-ffffffffffff',
    });
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, args);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  }

  for (const order of ['newest_first', 'oldest_first'] as const) {
    it(`lists one state across every tenant ${order.replace('_', ' ')} from jobs_recent_tenants, unsorted`, async () => {
      const text = await plan({ type: 'any' }, JobState.Pending, order);
      assert.match(text, /jobs_recent_tenants/);
      assert.doesNotMatch(text, /->\s+Sort|Seq Scan/, text);
    });
  }

  it('lists every state of one tenant by merging index scans, the populated state unsorted', async () => {
    // The states without rows may be read through a partial index and sorted: the planner
    // expects about one row there, and finds none.
    const text = await plan(tenantScope('tenant-3'), null, 'newest_first');
    assert.match(text, /Merge Append/);
    assert.match(text, /Limit[^\n]*\n\s*->\s+Index Scan Backward using jobs_recent on jobs /);
    assert.doesNotMatch(text, /Seq Scan/, text);
  });

  it('adds the system scope through jobs_recent when asked, still unsorted', async () => {
    const text = await plan({ type: 'any' }, JobState.Pending, 'newest_first', true);
    assert.match(text, /jobs_recent_tenants/);
    assert.match(text, /jobs_recent /);
    assert.doesNotMatch(text, /->\s+Sort|Seq Scan/, text);
  });

  it('pages newest first through every tenant, system jobs left out', async () => {
    const seen: number[] = [];
    let pageToken: string | null = null;
    do {
      const page = await queue.list({
        state: JobState.Pending,
        limit: 500,
        ...(pageToken === null ? {} : { pageToken }),
      });
      seen.push(...page.jobs.map((j) => j.createdAt));
      assert.ok(page.jobs.every((j) => j.tenant !== null));
      pageToken = page.nextPageToken;
    } while (pageToken !== null);
    assert.equal(seen.length, TENANTS * JOBS_PER_TENANT);
    assert.deepEqual(
      seen,
      seen.toSorted((a, b) => b - a),
    );
  });
});
