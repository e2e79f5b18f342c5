import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { makeConfig } from '../../src/core/config.ts';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { JobState, SYSTEM_SCOPE, tenantScope, type LeaseFence } from '../../src/core/types.ts';
import { openQueue } from '../../src/open.ts';
import { startServer } from '../../src/serve/server.ts';
import { liveServer } from '../support/server.ts';
import { rejectsWith, TOKEN_ROLES, TOKENS } from '../support/refuses.ts';
import { openWork } from '../support/work-stream.ts';

/** Open a Work stream and reject with the error it ends with. */
async function workStreamEnd(client: TelhaClient): Promise<void> {
  const work = openWork(client, { workerId: 'probe' });
  work.channel.grant(1);
  const error = await work.ended;
  if (error !== null) throw error;
}

describe('who may do what', () => {
  const { server } = liveServer({
    server: {
      tokens: [...TOKEN_ROLES],
    },
  });
  let acme: TelhaClient;
  let globex: TelhaClient;
  let worker: TelhaClient;
  let operator: TelhaClient;
  let globexJob: string;
  let globexDead: string;
  let globexLeased: { id: string; fence: LeaseFence };

  before(async () => {
    const client = (token: string): TelhaClient => new TelhaClient({ address: server.address, token });
    acme = client(TOKENS.acme);
    globex = client(TOKENS.globex);
    worker = client(TOKENS.worker);
    operator = client(TOKENS.operator);
    globexJob = (await globex.enqueue({ kind: 'report' })).job.jobId;
    await globex.enqueue({ kind: 'leased' });
    const [leased] = await worker.lease({ workerId: 'fleet-1', kinds: ['leased'] });
    assert.ok(leased);
    globexLeased = { id: leased.jobId, fence: { workerId: 'fleet-1', leaseGeneration: leased.leaseGeneration } };
    await globex.enqueue({ kind: 'doomed' });
    const [doomed] = await worker.lease({ workerId: 'fleet-1', kinds: ['doomed'] });
    assert.ok(doomed);
    globexDead = (
      await worker.fail(doomed.jobId, { workerId: 'fleet-1', leaseGeneration: 1 }, { error: 'x', permanent: true })
    ).jobId;
    await acme.enqueue({ kind: 'mine' });
  });

  it('refuses a call without a token, or with an unknown one, as UNAUTHENTICATED', async () => {
    await rejectsWith(new TelhaClient({ address: server.address }).counts(), ErrorCode.Unauthenticated);
    await rejectsWith(
      new TelhaClient({ address: server.address, token: 'not-a-real-token-at-all' }).counts(),
      ErrorCode.Unauthenticated,
    );
    await rejectsWith(workStreamEnd(new TelhaClient({ address: server.address })), ErrorCode.Unauthenticated);
  });

  it("keeps tenant A out of tenant B's jobs on every call", async () => {
    await rejectsWith(acme.show(globexJob), ErrorCode.NotFound);
    const listed = await acme.list();
    assert.ok(listed.jobs.every((j) => j.tenant === 'acme'));
    assert.equal(listed.jobs.length, 1);
    await rejectsWith(acme.list({ scope: tenantScope('globex') }), ErrorCode.PermissionDenied);
    const counts = await acme.counts();
    assert.deepEqual(counts, [{ state: JobState.Pending, kind: 'mine', count: 1 }]);
    await rejectsWith(acme.counts(tenantScope('globex')), ErrorCode.PermissionDenied);
    await rejectsWith(acme.enqueue({ kind: 'x' }, tenantScope('globex')), ErrorCode.PermissionDenied);
    await rejectsWith(acme.enqueue({ kind: 'system:x' }, SYSTEM_SCOPE), ErrorCode.PermissionDenied);
    await rejectsWith(acme.lease({ workerId: 'sneaky' }), ErrorCode.PermissionDenied);
    await rejectsWith(workStreamEnd(acme), ErrorCode.PermissionDenied);
    await rejectsWith(acme.complete(globexLeased.id, globexLeased.fence), ErrorCode.PermissionDenied);
    await rejectsWith(acme.fail(globexLeased.id, globexLeased.fence, { error: 'x' }), ErrorCode.PermissionDenied);
    await rejectsWith(acme.heartbeat(globexLeased.id, globexLeased.fence), ErrorCode.PermissionDenied);
    await rejectsWith(
      acme.checkpoint(globexLeased.id, globexLeased.fence, Buffer.from('x')),
      ErrorCode.PermissionDenied,
    );
    await rejectsWith(acme.retry(globexDead), ErrorCode.PermissionDenied);
    // Nothing of globex's changed.
    assert.equal((await operator.show(globexLeased.id)).state, JobState.Leased);
    assert.equal((await operator.show(globexDead)).state, JobState.Dead);
  });

  it('lets a tenant enqueue and read its own scope', async () => {
    const { job } = await acme.enqueue({ kind: 'own' }, tenantScope('acme'));
    assert.equal((await acme.show(job.jobId)).tenant, 'acme');
  });

  it('gives the worker fleet leasing and fenced submissions across tenants, and nothing else', async () => {
    await worker.heartbeat(globexLeased.id, globexLeased.fence);
    const { job } = await globex.enqueue({ kind: 'streamed' });
    const work = openWork(worker, { workerId: 'fleet-2', kinds: ['streamed'] });
    work.channel.grant(1);
    assert.equal((await work.received(1))[0]?.jobId, job.jobId);
    work.channel.end();
    assert.equal(await work.ended, null);
    await rejectsWith(worker.retry(globexDead), ErrorCode.PermissionDenied);
    await rejectsWith(worker.enqueue({ kind: 'x' }, tenantScope('acme')), ErrorCode.PermissionDenied);
    await rejectsWith(worker.show(globexJob), ErrorCode.PermissionDenied);
    await rejectsWith(worker.list(), ErrorCode.PermissionDenied);
    await rejectsWith(worker.counts(), ErrorCode.PermissionDenied);
  });

  it('lets an operator do everything, in any scope', async () => {
    const all = await operator.list();
    assert.ok(new Set(all.jobs.map((j) => j.tenant)).size >= 2);
    const retried = await operator.retry(globexDead);
    assert.equal(retried.state, JobState.Pending);
    const sys = await operator.enqueue({ kind: 'system:compact' }, SYSTEM_SCOPE);
    assert.equal(sys.job.tenant, null);
  });

  it('refuses to listen beyond loopback without tokens', async () => {
    const config = makeConfig({ storage: { path: server.dir }, server: { address: '0.0.0.0:0' } });
    const queue = await openQueue({ inMemory: true, config, services: false });
    try {
      await assert.rejects(startServer({ queue, config, logger: silentLogger }), (error: unknown) => {
        assert.ok(error instanceof TelhaError);
        assert.equal(error.field, 'server.address');
        assert.match(error.message, /without server\.tokens/);
        return true;
      });
    } finally {
      await queue.close();
    }
  });

  it('never writes a token to the log', async () => {
    const lines: string[] = [];
    const capture = {
      debug: (f: object, m: string) => lines.push(JSON.stringify(f) + m),
      info: (f: object, m: string) => lines.push(JSON.stringify(f) + m),
      warn: (f: object, m: string) => lines.push(JSON.stringify(f) + m),
      error: (f: object, m: string) => lines.push(JSON.stringify(f) + m),
    };
    const config = makeConfig({
      storage: { path: server.dir },
      server: { address: '127.0.0.1:0', http_address: '', tokens: [{ token: TOKENS.operator, role: 'operator' }] },
    });
    const queue = await openQueue({ inMemory: true, config, services: false, logger: capture });
    const running = await startServer({ queue, config, logger: capture });
    try {
      const c = new TelhaClient({ address: running.address, token: TOKENS.operator });
      await c.enqueue({ kind: 'k' }, tenantScope('t'));
      await rejectsWith(
        new TelhaClient({ address: running.address, token: TOKENS.acme }).counts(),
        ErrorCode.Unauthenticated,
      );
    } finally {
      await running.close();
      await queue.close();
    }
    assert.ok(lines.length > 0);
    for (const token of Object.values(TOKENS))
      assert.ok(!lines.some((l) => l.includes(token)), 'a token reached the log');
  });
});
