import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import type { TelhaError } from '../../src/core/errors.ts';
import { ErrorCode, LeaseConflictError } from '../../src/core/errors.ts';
import { JobState, tenantScope, type LeaseFence } from '../../src/core/types.ts';
import { liveServer } from '../support/server.ts';
import { rejectsWith, TOKEN_ROLES, TOKENS } from '../support/refuses.ts';

const cancelledConflict = (error: TelhaError): void => {
  assert.ok(error instanceof LeaseConflictError);
  assert.equal(error.reason, 'cancelled');
};

describe('cancel over gRPC', () => {
  const { server } = liveServer({
    server: {
      http_address: '',
      tokens: [...TOKEN_ROLES],
    },
  });
  let acme: TelhaClient;
  let globex: TelhaClient;
  let worker: TelhaClient;
  let operator: TelhaClient;

  before(() => {
    const client = (token: string): TelhaClient => new TelhaClient({ address: server.address, token });
    acme = client(TOKENS.acme);
    globex = client(TOKENS.globex);
    worker = client(TOKENS.worker);
    operator = client(TOKENS.operator);
  });

  it("lets a tenant cancel its own job, and answers another tenant's as not found, changing nothing", async () => {
    const { job } = await acme.enqueue({ kind: 'report' });
    const cancelled = await acme.cancel(job.jobId, { reason: 'ordered twice' });
    assert.equal(cancelled.state, JobState.Cancelled);
    assert.equal(cancelled.events.at(-1)?.transition, 'cancelled');
    assert.equal(cancelled.events.at(-1)?.detail, 'by=tenant:acme reason=ordered twice');

    const theirs = (await globex.enqueue({ kind: 'report' })).job;
    await rejectsWith(acme.cancel(theirs.jobId), ErrorCode.NotFound);
    await rejectsWith(acme.cancelMatching({ scope: tenantScope('globex') }), ErrorCode.PermissionDenied);
    await rejectsWith(worker.cancel(theirs.jobId), ErrorCode.PermissionDenied);
    await rejectsWith(worker.cancelMatching({ kindPrefix: 'report' }), ErrorCode.PermissionDenied);
    assert.deepEqual(await operator.show(theirs.jobId), theirs);
    await rejectsWith(acme.cancel(job.jobId), ErrorCode.FailedPrecondition);
    await rejectsWith(acme.retry(job.jobId), ErrorCode.PermissionDenied);
  });

  it("fences a leased job's worker out: its heartbeat and completion are ABORTED with reason cancelled", async () => {
    const { job } = await globex.enqueue({ kind: 'fenced' });
    const [leased] = await worker.lease({ workerId: 'fleet-1', kinds: ['fenced'] });
    assert.equal(leased?.jobId, job.jobId);
    const fence: LeaseFence = { workerId: 'fleet-1', leaseGeneration: leased.leaseGeneration };
    const cancelled = await globex.cancel(job.jobId);
    assert.equal(cancelled.state, JobState.Cancelled);
    assert.equal(cancelled.workerId, null);
    await rejectsWith(worker.heartbeat(job.jobId, fence), ErrorCode.LeaseConflict, cancelledConflict);
    await rejectsWith(
      worker.checkpoint(job.jobId, fence, Buffer.from('x')),
      ErrorCode.LeaseConflict,
      cancelledConflict,
    );
    await rejectsWith(worker.complete(job.jobId, fence), ErrorCode.LeaseConflict, cancelledConflict);
    await rejectsWith(worker.fail(job.jobId, fence, { error: 'late' }), ErrorCode.LeaseConflict, cancelledConflict);
    const [each] = await worker.completeEach([{ jobId: job.jobId, fence }]);
    assert.ok(each !== undefined && !each.ok && each.error instanceof LeaseConflictError);
    assert.equal(each.error.reason, 'cancelled');
    assert.deepEqual(await operator.show(job.jobId), cancelled);
    // An operator may bring it back.
    const retried = await operator.retry(job.jobId);
    assert.equal(retried.state, JobState.Pending);
  });

  it('cancels the jobs matching a kind prefix and a state, in the caller scope only', async () => {
    const mine = await acme.enqueueBatch([{ kind: 'mail.a' }, { kind: 'mail.b' }, { kind: 'other' }]);
    const theirs = (await globex.enqueue({ kind: 'mail.a' })).job;
    await acme.enqueue({ kind: 'mail.leased' });
    const [leased] = await worker.lease({ workerId: 'fleet-2', kinds: ['mail.leased'] });
    assert.ok(leased);
    assert.equal(await acme.cancelMatching({ kindPrefix: 'mail.', state: JobState.Pending }), 2);
    assert.equal((await acme.show(leased.jobId)).state, JobState.Leased);
    assert.equal(await operator.cancelMatching({ scope: tenantScope('acme'), kindPrefix: 'mail.' }), 1);
    assert.equal((await acme.show(leased.jobId)).state, JobState.Cancelled);
    assert.equal((await acme.show(mine[2]!.job.jobId)).state, JobState.Pending);
    assert.equal((await globex.show(theirs.jobId)).state, JobState.Pending);
    await rejectsWith(acme.cancelMatching({ kindPrefix: 'mail.', state: JobState.Dead }), ErrorCode.InvalidArgument);
    const listed = await acme.list({ state: JobState.Cancelled, kindPrefix: 'mail.' });
    assert.equal(listed.jobs.length, 3);
    const counts = await acme.counts();
    assert.ok(counts.some((row) => row.state === JobState.Cancelled && row.kind === 'mail.a' && row.count === 1));
  });
});
