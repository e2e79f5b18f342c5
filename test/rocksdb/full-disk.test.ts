/**
 * A full disk under `telha serve` on RocksDB, on a real small file system (a tmpfs this test
 * mounts; CI runs as root): writes are refused as RESOURCE_EXHAUSTED naming the disk and the store,
 * readiness and the metrics say why, reads go on, and once space is freed writes resume by
 * themselves with every acknowledged job there once. A start on a full disk says the disk is full.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { TelhaClient } from '../../src/client/client.ts';
import { OffsetClock } from '../../src/core/clock.ts';
import { makeConfig } from '../../src/core/config.ts';
import { ErrorCode, isTelhaError } from '../../src/core/errors.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { tenantScope } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { startServer } from '../../src/serve/server.ts';
import { ReopeningRocksStore } from '../../src/storage/rocksdb/reopening-store.ts';
import { allJobs, builtCli, freePort } from '../support/server.ts';

const exec = promisify(execFile);
const acme = tenantScope('acme');
/** Big enough that, once the filler goes, RocksDB has room to replay its log and start a new one. */
const DISK_SIZE = '64m';

/** A fresh tmpfs of `size`, mounted for this test; mounting needs root, and without it the test fails. */
function mountSmallDisk(size: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'telha-full-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`this test mounts a small tmpfs and needs root to: ${String(error)}`);
  }
  return dir;
}

/** Lazily: a failed test may leave a store open on it. */
function unmount(dir: string): void {
  execFileSync('umount', ['--lazy', dir]);
  rmSync(dir, { recursive: true, force: true });
}

/** Fill the disk with one file, leaving `leave` bytes free. */
function fillDisk(dir: string, leave: number): string {
  const { bavail, bsize } = statfsSync(dir);
  const filler = join(dir, 'filler');
  writeFileSync(filler, Buffer.alloc(Math.max(0, bavail * bsize - leave)));
  return filler;
}

const isDiskFull =
  (path: string) =>
  (error: unknown): boolean => {
    assert.ok(isTelhaError(error, ErrorCode.ResourceExhausted), String(error));
    assert.ok(error.message.includes(`the disk holding the store at ${path} is full`), error.message);
    return true;
  };

describe('a full disk under the server', () => {
  let disk: string;
  before(() => {
    disk = mountSmallDisk(DISK_SIZE);
  });
  after(() => unmount(disk));

  for (const [where, options] of [
    ['on the event loop', {}],
    ['on the write thread', { writeThread: true, writeThreadMinOps: 0 }],
  ] as const) {
    it(`refuses writes naming the disk until space is freed, then takes them with every acknowledged job there once (${where})`, async (t) => {
      const path = join(disk, `store-${options.writeThread === true ? 'thread' : 'loop'}`);
      const config = makeConfig({
        storage: { path },
        // Every scrape reads the store's figures afresh.
        metrics: { refresh_ms: 1 },
        server: { address: '127.0.0.1:0', http_address: '127.0.0.1:0' },
      });
      /** What the store logs as writes resume: how long its reopen took. */
      const reopens: number[] = [];
      const logger = {
        ...silentLogger,
        info: (fields: { reopenMs?: number }) => void reopens.push(fields.reopenMs ?? -1),
      };
      const store = await ReopeningRocksStore.open({ path, logger, ...options });
      const queue = new Queue({ store, config, clock: new OffsetClock(), services: false });
      const server = await startServer({ queue, config, logger: silentLogger });
      const http = `http://${server.http?.address ?? ''}`;
      const client = new TelhaClient({ address: server.address });
      const filler = fillDisk(disk, 4 * 1024 * 1024);
      let passed = false;
      try {
        const payload = new Uint8Array(2048).fill(7);
        const acknowledged = new Set<string>();
        let refusal: unknown = null;
        for (let batch = 0; refusal === null && batch < 10_000; batch++) {
          try {
            const jobs = Array.from({ length: 20 }, () => ({ kind: 'email', payload }));
            for (const { job } of await client.enqueueBatch(jobs, acme)) acknowledged.add(job.jobId);
          } catch (error) {
            refusal = error;
          }
        }
        assert.ok(acknowledged.size > 0, 'some jobs went in before the disk filled');
        assert.ok(isDiskFull(path)(refusal));
        await assert.rejects(client.enqueue({ kind: 'email', payload }, acme), isDiskFull(path));
        await assert.rejects(client.lease({ workerId: 'w1', scope: acme }), isDiskFull(path));

        const ready = await fetch(`${http}/readyz`);
        assert.equal(ready.status, 503);
        assert.match(await ready.text(), new RegExp(`^not ready: the disk holding the store at ${path} is full`));
        const metrics = await (await fetch(`${http}/metrics`)).text();
        assert.match(metrics, /^telha_store_disk_full 1$/m);
        assert.match(metrics, /^telha_store_write_stopped 1$/m);
        const held = await allJobs(client, acme);
        assert.deepEqual(new Set(held.map((job) => job.jobId)), acknowledged, 'reads go on: every acknowledged job');

        const freed = performance.now();
        rmSync(filler);
        await store.writable();
        const { job: first } = await client.enqueue({ kind: 'email', payload }, acme);
        const resumedMs = performance.now() - freed;
        t.diagnostic(
          `from freeing space to the first accepted write: ${resumedMs.toFixed(0)} ms (the reopen: ${reopens.join(', ')} ms)`,
        );
        acknowledged.add(first.jobId);

        assert.equal((await fetch(`${http}/readyz`)).status, 200);
        assert.match(await (await fetch(`${http}/metrics`)).text(), /^telha_store_disk_full 0$/m);
        const ids = (await allJobs(client, acme)).map((job) => job.jobId);
        assert.equal(ids.length, acknowledged.size, 'no job twice, none refused');
        assert.deepEqual(new Set(ids), acknowledged);
        const [pending] = await client.counts(acme);
        assert.equal(pending?.count, acknowledged.size, 'the counters were rebuilt from the disk');
        const [leased] = await client.lease({ workerId: 'w1', scope: acme });
        assert.ok(leased !== undefined && acknowledged.has(leased.jobId));
        passed = true;
      } finally {
        rmSync(filler, { force: true });
        client.close();
        await server.close();
        // A store whose disk filled may fail to close; that must not hide why the test failed.
        await queue.close().catch((error: unknown) => {
          if (passed) throw error;
        });
      }
    });
  }

  it('says the disk is full when telha serve starts on one', async () => {
    const path = join(disk, 'restarted');
    const store = await ReopeningRocksStore.open({ path });
    const queue = new Queue({ store, config: makeConfig({ storage: { path } }), services: false });
    await queue.enqueue({ kind: 'email', payload: new Uint8Array(1024) }, acme);
    await queue.close();
    const filler = fillDisk(disk, 0);
    try {
      assert.match(
        await serveFails(path),
        new RegExp(`^error: resource_exhausted: the disk holding the store at ${path} is full`, 'm'),
      );
    } finally {
      rmSync(filler);
    }
  });

  it('says the disk is full when telha serve cannot make the store directory on one', async () => {
    // Out of inodes: the root directory and one file take the two there are.
    const full = mountSmallDisk('1m,nr_inodes=2');
    try {
      writeFileSync(join(full, 'filler'), '');
      const path = join(full, 'store');
      assert.match(
        await serveFails(path),
        new RegExp(`^error: resource_exhausted: the disk holding the store at ${path} is full`, 'm'),
      );
    } finally {
      unmount(full);
    }
  });
});

/** `telha serve` on the store at `path`, which must exit 1: what it wrote to stderr. */
async function serveFails(path: string): Promise<string> {
  const serve = exec(
    process.execPath,
    [builtCli(), 'serve', '--data', path, '--listen', `127.0.0.1:${await freePort()}`],
    { env: { ...process.env, TELHA_LOG_LEVEL: 'silent', TELHA_SERVER__HTTP_ADDRESS: '127.0.0.1:0' } },
  );
  return serve.then(
    () => assert.fail('telha serve started on a full disk'),
    (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 1);
      return error.stderr;
    },
  );
}
