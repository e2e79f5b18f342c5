import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { encodeJobKey, jobIdToBytes, tenantScopeBytes } from '../../src/codec/keys.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { makeConfig } from '../../src/core/config.ts';
import type { Logger } from '../../src/core/logger.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { openQueue } from '../../src/open.ts';
import { COLUMNS } from '../../src/storage/rocksdb/columns.ts';
import { RocksDatabase } from '../../src/storage/rocksdb/database.ts';
import { tempDir } from '../support/backends.ts';

const acme = tenantScope('acme');

describe('rocksdb corrupt rows', () => {
  it('skips a row it cannot decode, counts and logs it, and keeps serving every other job', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const config = makeConfig({ storage: { path: dir }, retention: { enabled: false } });
    try {
      let queue = await openQueue({ config, clock, services: false });
      const before = await queue.enqueue({ kind: 'k' }, acme);
      await queue.close();

      // Put two undecodable rows in the Pending range, ahead of the good job: an unknown version and garbage.
      // Every column the store has: RocksDB opens a store only with all of its column families.
      const db = await RocksDatabase.open(dir, COLUMNS);
      for (const [i, value] of [Buffer.from([9, 1, 2]), Buffer.from([1, 0xc1])].entries()) {
        const key = encodeJobKey({
          scope: tenantScopeBytes('acme'),
          state: JobState.Pending,
          priority: 0,
          createdAt: i + 1,
          jobId: jobIdToBytes(`00000000-0000-7000-8000-00000000000${i}`),
        });
        db.write([{ column: db.column('jobs'), key, value }], false);
      }
      await db.close();

      const warnings: object[] = [];
      const logger: Logger = { debug() {}, info() {}, error() {}, warn: (fields) => warnings.push(fields) };
      queue = await openQueue({ config, clock, services: false, logger });
      try {
        assert.equal(queue.stats().corruptRows, 2);
        assert.equal(warnings.length, 2);
        assert.match(JSON.stringify(warnings[0]), /"key":"[0-9a-f]{116}"/);
        const listed = await queue.list({ scope: acme });
        assert.deepEqual(
          listed.jobs.map((j) => j.jobId),
          [before.job.jobId],
        );
        const leased = await queue.leaseNext({ workerId: 'w1', scope: acme });
        assert.equal(leased?.jobId, before.job.jobId);
      } finally {
        await queue.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
