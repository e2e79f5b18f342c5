import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { ErrorCode } from '../../src/core/errors.ts';
import { JobState, SYSTEM_SCOPE } from '../../src/core/types.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { rejectsWith, TOKEN_ROLES, TOKENS } from '../support/refuses.ts';

describe('operator controls over gRPC: discard, run now, and listings', () => {
  let server: TestServer;
  let acme: TelhaClient;
  let globex: TelhaClient;
  let worker: TelhaClient;
  let operator: TelhaClient;

  before(async () => {
    server = await startTestServer({ server: { http_address: '', tokens: [...TOKEN_ROLES] } });
    const client = (token: string): TelhaClient => new TelhaClient({ address: server.address, token });
    acme = client(TOKENS.acme);
    globex = client(TOKENS.globex);
    worker = client(TOKENS.worker);
    operator = client(TOKENS.operator);
  });
  after(async () => {
    await server.close();
  });

  /** A job of `owner`'s, dead after one permanent failure. */
  async function deadJob(owner: TelhaClient, kind: string): Promise<string> {
    const { job } = await owner.enqueue({ kind });
    const [leased] = await worker.lease({ workerId: 'w', kinds: [kind] });
    assert.equal(leased?.jobId, job.jobId);
    await worker.fail(
      job.jobId,
      { workerId: 'w', leaseGeneration: leased.leaseGeneration },
      { error: 'boom', permanent: true },
    );
    return job.jobId;
  }

  it("lets a tenant discard its own dead job, not another tenant's, and a worker none", async () => {
    const mine = await deadJob(acme, 'discard.mine');
    const theirs = await deadJob(globex, 'discard.theirs');
    await rejectsWith(acme.discard(theirs), ErrorCode.NotFound);
    await rejectsWith(worker.discard(theirs), ErrorCode.PermissionDenied);
    assert.equal((await operator.show(theirs)).state, JobState.Dead);
    const discarded = await acme.discard(mine, { reason: 'known bad input' });
    assert.equal(discarded.state, JobState.Cancelled);
    assert.equal(discarded.events.at(-1)?.transition, 'discarded');
    assert.equal(discarded.events.at(-1)?.detail, 'by=tenant:acme reason=known bad input');
    await rejectsWith(acme.discard(mine), ErrorCode.FailedPrecondition);
    assert.equal((await operator.discard(theirs)).state, JobState.Cancelled);
  });

  it('runs a delayed job now for its tenant and an operator, refusing a ready one', async () => {
    const { job } = await acme.enqueue({ kind: 'later', delayMs: 3_600_000 });
    await rejectsWith(globex.runNow(job.jobId), ErrorCode.NotFound);
    await rejectsWith(worker.runNow(job.jobId), ErrorCode.PermissionDenied);
    const ready = await acme.runNow(job.jobId);
    assert.equal(ready.notBefore, null);
    assert.equal(ready.events.at(-1)?.transition, 'run_now');
    await rejectsWith(operator.runNow(job.jobId), ErrorCode.FailedPrecondition);
    const [leased] = await worker.lease({ workerId: 'w', kinds: ['later'] });
    assert.equal(leased?.jobId, job.jobId);
  });

  it('lists newest first, oldest first on request, and system jobs only when asked', async () => {
    const first = (await globex.enqueue({ kind: 'order.a' })).job.jobId;
    const second = (await acme.enqueue({ kind: 'order.b' })).job.jobId;
    const system = (await operator.enqueue({ kind: 'system:order' }, SYSTEM_SCOPE)).job.jobId;
    const ids = async (options: Parameters<TelhaClient['list']>[0]): Promise<string[]> =>
      (await operator.list({ state: JobState.Pending, ...options })).jobs
        .map((j) => j.jobId)
        .filter((id) => [first, second, system].includes(id));
    assert.deepEqual(await ids({}), [second, first]);
    assert.deepEqual(await ids({ order: 'oldest_first' }), [first, second]);
    assert.deepEqual(await ids({ includeSystem: true }), [system, second, first]);
    assert.deepEqual(await ids({ kindPrefix: 'system:' }), [system]);
  });
});
