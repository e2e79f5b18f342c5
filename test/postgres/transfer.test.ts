/**
 * Moving a store between backends with the CLI: a RocksDB store exported by `telha export`,
 * imported into PostgreSQL by `telha import`, exported from there and imported into a fresh
 * RocksDB store, every record compared at each step; and a job leased before the move completed
 * by its holder on PostgreSQL after it.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { main } from '../../src/cli/program.ts';
import { systemClock } from '../../src/core/clock.ts';
import { makeConfig, type ConfigInput } from '../../src/core/config.ts';
import { ANY_SCOPE, JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import type { Queue } from '../../src/engine/queue.ts';
import { openQueue } from '../../src/open.ts';
import { checkKeyed, fillKeyed } from '../../src/testing/conformance/transfer-keys.ts';
import { dropTestSchema, tempDir, TEST_PG_URL, uniqueSchema } from '../support/backends.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');

/** `telha ...args` in this process: its exit code and output. */
async function telha(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: {},
    clock: systemClock,
  });
  return { code, stdout, stderr };
}

/** Every job, schedule, pause and kind limit a queue holds, in an order that does not depend on the store. */
async function contents(queue: Queue): Promise<unknown> {
  const jobs: JobRecord[] = [];
  let pageToken: string | undefined;
  do {
    const page = await queue.list({ scope: ANY_SCOPE, limit: 1_000, ...(pageToken ? { pageToken } : {}) });
    jobs.push(...page.jobs);
    pageToken = page.nextPageToken ?? undefined;
  } while (pageToken);
  return {
    jobs: jobs.sort((a, b) => a.jobId.localeCompare(b.jobId)),
    schedules: (await queue.listSchedules({ scope: ANY_SCOPE })).schedules,
    pauses: await queue.pauses(),
    limits: await queue.kindLimits(),
  };
}

async function opened(values: ConfigInput): Promise<Queue> {
  return openQueue({ config: makeConfig(values), services: false });
}

describe('moving a store between RocksDB and PostgreSQL', () => {
  it('carries every record RocksDB -> PostgreSQL -> RocksDB, and a leased job stays its holder’s', async () => {
    const dir = tempDir('telha-transfer-');
    const schema = uniqueSchema('transfer');
    const pgToml = join(dir, 'pg.toml');
    writeFileSync(pgToml, `[storage]\nkind = "postgres"\nurl = "${TEST_PG_URL}"\nschema = "${schema}"\n`);
    try {
      const source = await opened({ storage: { path: join(dir, 'rocks-1') } });
      const leasedKinds: string[] = [];
      for (let n = 0; n < 300; n++) {
        const scope = n % 3 === 0 ? globex : acme;
        await source.enqueue(
          {
            kind: `k.${n % 7}`,
            payload: `p${n}`,
            priority: n % 5,
            ...(n % 10 === 0 ? { idempotencyKey: `i${n}` } : {}),
          },
          scope,
        );
      }
      await source.enqueue({ kind: 'later', delayMs: 3_600_000 }, acme);
      for (let n = 0; n < 40; n++) {
        const job = await source.leaseNext({ workerId: `w${n % 4}`, scope: ANY_SCOPE });
        assert.ok(job);
        leasedKinds.push(job.kind);
        const fence = { workerId: job.workerId ?? '', leaseGeneration: job.leaseGeneration };
        if (n % 4 === 0) await source.complete(job.jobId, fence, { result: Buffer.from(`r${n}`) });
        else if (n % 4 === 1) await source.fail(job.jobId, fence, { error: 'boom', permanent: n % 8 === 1 });
        else if (n % 4 === 2) await source.checkpoint(job.jobId, fence, Buffer.from(`c${n}`));
      }
      await source.cancel((await source.list({ scope: acme, state: JobState.Pending })).jobs[0]?.jobId ?? '', {
        by: 'test',
      });
      await source.createSchedule({ name: 'nightly', cron: '0 2 * * *', job: { kind: 'report' } }, globex);
      await source.pause({ kindPrefix: 'k.3', scope: acme });
      await source.setKindLimit({ kindPrefix: 'k.1', concurrency: 5 });
      const before = await contents(source);
      const held = (await source.leased({})).find((job) => job.workerId !== null);
      assert.ok(held, 'a job is leased when the store moves');
      await source.close();

      const first = join(dir, 'rocks.ndjson');
      assert.deepEqual(await telha('export', '--data', join(dir, 'rocks-1'), '--output', first), {
        code: 0,
        stdout: '',
        stderr:
          'exported 301 jobs, 1 schedules, 1 pauses, 1 kind limits, ' +
          '0 tenant limits, 0 ordered-key lines, 0 supersede-key holders\n',
      });
      const intoPg = await telha('import', first, '--config', pgToml);
      assert.equal(intoPg.code, 0, intoPg.stderr);
      assert.match(intoPg.stdout, /^imported 301 jobs, 1 schedules, 1 pauses, 1 kind limits, 0 tenant limits,/);
      const pg = await opened({ storage: { kind: 'postgres', url: TEST_PG_URL, schema } });
      assert.deepEqual(await contents(pg), before);
      await pg.close();

      const second = join(dir, 'pg.ndjson');
      assert.equal((await telha('export', '--config', pgToml, '--output', second)).code, 0);
      const back = await telha('import', second, '--data', join(dir, 'rocks-2'));
      assert.equal(back.code, 0, back.stderr);
      const rocks = await opened({ storage: { path: join(dir, 'rocks-2') } });
      assert.deepEqual(await contents(rocks), before);
      await rocks.close();
      // Byte for byte: each record's value is the one the first store held.
      const records = (file: string): string[] =>
        readFileSync(file, 'utf8')
          .split('\n')
          .filter((line) => line.startsWith('{"type"'))
          .sort();
      assert.deepEqual(records(second), records(first));

      // A second import into the PostgreSQL store is refused: it holds jobs now.
      const again = await telha('import', first, '--config', pgToml);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /holds 301 jobs.*--merge/);

      // The holder of a lease taken on RocksDB completes its job on PostgreSQL.
      const after = await opened({ storage: { kind: 'postgres', url: TEST_PG_URL, schema } });
      const { job } = await after.complete(held.jobId, {
        workerId: held.workerId ?? '',
        leaseGeneration: held.leaseGeneration,
      });
      assert.equal(job.state, JobState.Completed);
      await after.close();
    } finally {
      await dropTestSchema(schema);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('carries tenant limits, ordered keys and supersede keys RocksDB -> PostgreSQL -> RocksDB', async () => {
    const dir = tempDir('telha-transfer-keys-');
    const schema = uniqueSchema('transfer_keys');
    const pgToml = join(dir, 'pg.toml');
    writeFileSync(pgToml, `[storage]\nkind = "postgres"\nurl = "${TEST_PG_URL}"\nschema = "${schema}"\n`);
    try {
      const source = await opened({ storage: { path: join(dir, 'rocks-1') } });
      const fill = await fillKeyed(source);
      await source.close();
      const first = join(dir, 'rocks.ndjson');
      assert.equal((await telha('export', '--data', join(dir, 'rocks-1'), '--output', first)).code, 0);
      const intoPg = await telha('import', first, '--config', pgToml);
      assert.equal(intoPg.code, 0, intoPg.stderr);
      assert.match(intoPg.stdout, /2 tenant limits, 3 ordered-key lines, 1 supersede-key holders;/);
      const second = join(dir, 'pg.ndjson');
      assert.equal((await telha('export', '--config', pgToml, '--output', second)).code, 0);
      const back = await telha('import', second, '--data', join(dir, 'rocks-2'));
      assert.equal(back.code, 0, back.stderr);

      // Each store runs what it received as the first store would have run it.
      const pg = await opened({ storage: { kind: 'postgres', url: TEST_PG_URL, schema } });
      await checkKeyed(pg, fill);
      await pg.close();
      const rocks = await opened({ storage: { path: join(dir, 'rocks-2') } });
      await checkKeyed(rocks, fill);
      await rocks.close();
    } finally {
      await dropTestSchema(schema);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
