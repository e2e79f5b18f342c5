import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { MIGRATIONS } from '../../src/storage/postgres/migrations.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { TEST_PG_URL, uniqueSchema } from '../support/backends.ts';

describe('postgres migrations', () => {
  it('applies each migration once when several servers start at once, and a later start changes nothing', async () => {
    const schema = uniqueSchema('migrate');
    const admin = new pg.Client({ connectionString: TEST_PG_URL });
    await admin.connect();
    try {
      const stores = await Promise.all(
        [1, 2, 3].map(() => PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 1 })),
      );
      await Promise.all(stores.map((s) => s.close()));
      const applied = await admin.query<{ version: number }>(
        `SELECT version FROM "${schema}".migrations ORDER BY version`,
      );
      assert.deepEqual(
        applied.rows.map((r) => r.version),
        MIGRATIONS.map((_, i) => i + 1),
      );
      const finished = await admin.query<{ indexdef: string }>(
        `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'jobs_finished'`,
        [schema],
      );
      // Migration 4: retention finds Cancelled rows (state 5) through the same index as Completed and Dead.
      assert.match(finished.rows[0]?.indexdef ?? '', /ARRAY\[2, 4, 5\]/);
      const before = await admin.query(`SELECT applied_at FROM "${schema}".migrations`);
      const later = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 1 });
      await later.close();
      const after = await admin.query(`SELECT applied_at FROM "${schema}".migrations`);
      assert.deepEqual(after.rows, before.rows);
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    }
  });
});
