import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AttemptTimeoutError, Worker } from '../../src/client/worker.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { liveServer } from '../support/server.ts';

const acme = tenantScope('acme');

describe('job timeouts through the server', () => {
  const { server, client } = liveServer({ jobs: { kinds: { 'report.': { timeout_secs: 600 } } } });

  it("carries a job's timeout_secs and its attempt deadline on the wire", async () => {
    const { job } = await client.enqueue({ kind: 'mail', timeoutSecs: 90 }, acme);
    assert.equal(job.timeoutSecs, 90);
    assert.equal(job.attemptDeadline, null, 'no attempt before the lease');
    const [leased] = await client.lease({ workerId: 'w1', kinds: ['mail'], scope: acme });
    assert.ok(leased);
    assert.equal(leased.attemptDeadline, (await server.queue.show(job.jobId)).attemptDeadline);
    assert.ok(leased.attemptDeadline !== null && leased.leaseDeadline !== null);
    assert.ok(leased.leaseDeadline <= leased.attemptDeadline);
    // A kind's timeout reaches the wire as the attempt deadline of a job that set none.
    const { job: report } = await client.enqueue({ kind: 'report.daily' }, acme);
    const [byKind] = await client.lease({ workerId: 'w1', kinds: ['report.'], scope: acme });
    assert.equal(byKind?.jobId, report.jobId);
    assert.equal(byKind?.timeoutSecs, null);
    assert.ok(byKind?.attemptDeadline !== null && byKind?.attemptDeadline !== undefined);
  });

  it('refuses a timeout_secs of 0 over the wire, naming the field', async () => {
    await assert.rejects(client.enqueue({ kind: 'mail', timeoutSecs: 0 }, acme), /timeout_secs/);
  });

  it('aborts a handler that outlives its attempt, submits nothing, and the reaper takes the job back', async () => {
    const { job } = await client.enqueue({ kind: 'hang', timeoutSecs: 1 }, acme);
    let reason: unknown;
    let stopped!: () => void;
    const aborted = new Promise<void>((resolve) => (stopped = resolve));
    const worker = new Worker({
      address: server.address,
      kinds: ['hang'],
      heartbeatFraction: 0.001,
      // A handler that would heartbeat for ever: it stops only when told.
      handler: (ctx) =>
        new Promise((_, reject) => {
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason;
            stopped();
            reject(new Error('stopped'));
          });
        }),
    }).start();
    await aborted;
    await worker.close();
    assert.ok(reason instanceof AttemptTimeoutError);
    const held = await client.show(job.jobId);
    assert.equal(held.state, JobState.Leased, 'the worker submitted no failure of its own');
    // The worker's timer and the server's clock may disagree by a millisecond; past the deadline for sure:
    server.clock.advance(1_000);
    assert.deepEqual(await server.queue.maintenance.reapExpired(), { reaped: 1, dead: 0 });
    const reaped = await client.show(job.jobId);
    assert.equal(reaped.state, JobState.Pending);
    assert.match(reaped.events.at(-1)?.detail ?? '', / timeout$/);
  });
});
