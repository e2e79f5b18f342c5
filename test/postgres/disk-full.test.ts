/**
 * PostgreSQL out of disk space answers RESOURCE_EXHAUSTED (retry after a pause), not INTERNAL.
 * Filling the database's real disk is not safe on a shared machine, so a trigger on the jobs
 * table raises PostgreSQL's own `disk_full` (SQLSTATE 53100) as the disk would, and the enqueue
 * goes through a real server and the real driver.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { TelhaClient } from '../../src/client/client.ts';
import { makeConfig } from '../../src/core/config.ts';
import { ErrorCode, isTelhaError } from '../../src/core/errors.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { tenantScope } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { startServer } from '../../src/serve/server.ts';
import { PostgresJobStore } from '../../src/storage/postgres/postgres-store.ts';
import { dropTestSchema, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';

const acme = tenantScope('acme');

describe('PostgreSQL out of disk space', () => {
  const schema = uniqueSchema('diskfull');
  let store: PostgresJobStore;
  before(async () => {
    store = await PostgresJobStore.open({ url: TEST_PG_URL, schema, poolSize: 2 });
  });
  after(() => dropTestSchema(schema));

  it('answers an enqueue RESOURCE_EXHAUSTED naming the disk', async () => {
    const config = makeConfig({
      storage: { kind: 'postgres', url: TEST_PG_URL, schema },
      server: { address: '127.0.0.1:0', http_address: '127.0.0.1:0' },
    });
    const queue = new Queue({ store, config, services: false });
    const server = await startServer({ queue, config, logger: silentLogger });
    const client = new TelhaClient({ address: server.address });
    const admin = new pg.Client({ connectionString: TEST_PG_URL });
    await admin.connect();
    try {
      await admin.query(
        `CREATE FUNCTION "${schema}".disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$`,
      );
      await admin.query(
        `CREATE TRIGGER disk_full BEFORE INSERT ON "${schema}".jobs FOR EACH ROW EXECUTE FUNCTION "${schema}".disk_full()`,
      );
      await assert.rejects(client.enqueue({ kind: 'email' }, acme), (error: unknown) => {
        assert.ok(isTelhaError(error, ErrorCode.ResourceExhausted), String(error));
        assert.match(error.message, /^the database is out of disk space \(disk_full\): could not extend file/);
        return true;
      });
    } finally {
      await admin.end();
      client.close();
      await server.close();
      await queue.close();
    }
  });
});
