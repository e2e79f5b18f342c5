/**
 * The Work stream: jobs pushed within the credit granted and as soon as they
 * are enqueued, results answered item by item, protocol errors refused with
 * their status, and a clean end when the server shuts down.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { TelhaClient } from '../../src/client/client.ts';
import { ErrorCode, LeaseConflictError, TelhaError } from '../../src/core/errors.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { WorkRequestSchema, type WorkRequest, type WorkResponse } from '../../src/gen/telha/v1/queue_pb.ts';
import { FIELD_HEADER, queueServiceDefinition, Status } from '../../src/wire/service.ts';
import { parked } from '../support/events.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { openWork } from '../support/work-stream.ts';

const acme = tenantScope('acme');
const UNKNOWN_JOB = '00000000-0000-4000-8000-000000000000';
const Stub = grpc.makeGenericClientConstructor(queueServiceDefinition, 'QueueService');

/** Send raw WorkRequests on a new stream and return the status it ends with. */
function rawStream(address: string, messages: Parameters<typeof create<typeof WorkRequestSchema>>[1][]) {
  const stub = new Stub(address, grpc.credentials.createInsecure());
  const call = (
    stub as unknown as { work(metadata: grpc.Metadata): grpc.ClientDuplexStream<WorkRequest, WorkResponse> }
  ).work(new grpc.Metadata());
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.on('error', () => {});
  call.on('data', () => {});
  for (const message of messages) call.write(create(WorkRequestSchema, message));
  return status.finally(() => stub.close());
}

describe('the Work stream', () => {
  let server: TestServer;
  let client: TelhaClient;

  beforeEach(async () => {
    server = await startTestServer();
    client = new TelhaClient({ address: server.address });
  });
  afterEach(async () => {
    client.close();
    await server.close();
  });

  it('pushes no more jobs than the credit granted, and more as credit arrives', async () => {
    const ids = (
      await client.enqueueBatch(
        Array.from({ length: 5 }, () => ({ kind: 'credit' })),
        acme,
      )
    ).map((r) => r.job.jobId);
    const work = openWork(client, { workerId: 'w1', kinds: ['credit'] });
    work.channel.grant(2);
    const first = await work.received(2);
    // A result's answer comes after the server has handled every earlier message: by then it
    // had the chance to push more, and must not have.
    const [one] = first;
    assert.ok(one);
    await work.channel.settle({
      type: 'complete',
      jobId: one.jobId,
      fence: { workerId: 'w1', leaseGeneration: one.leaseGeneration },
      successors: [],
    });
    assert.equal(work.jobs.length, 2);
    const counts = await client.counts(acme);
    assert.equal(counts.find((c) => c.state === JobState.Pending)?.count, 3);

    work.channel.grant(3);
    const all = await work.received(5);
    assert.deepEqual(all.map((j) => j.jobId).sort(), [...ids].sort());
    assert.ok(all.every((j) => j.state === JobState.Leased && j.workerId === 'w1'));
    work.channel.end();
    assert.equal(await work.ended, null);
  });

  it('pushes a job the moment it is enqueued to a worker that holds credit', async () => {
    // Wait until the server has parked the stream's lease, so the enqueue must wake it.
    const waiting = parked(server.queue);
    const work = openWork(client, { workerId: 'w1' });
    work.channel.grant(1);
    const woken = server.queue.waits.ended.woken;
    await waiting;
    const { job } = await client.enqueue({ kind: 'late' }, acme);
    const [pushed] = await work.received(1);
    assert.equal(pushed?.jobId, job.jobId);
    assert.equal(server.queue.waits.ended.woken, woken + 1);
    work.channel.end();
    await work.ended;
  });

  for (const jobsWithAnswers of [true, false]) {
    it(`sends the next job and a result's answer ${jobsWithAnswers ? 'in one message to a worker that reads both' : 'apart to a worker that did not say it reads both'}`, async () => {
      await client.enqueueBatch([{ kind: 'pair' }, { kind: 'pair' }], acme);
      const stub = new Stub(server.address, grpc.credentials.createInsecure());
      const call = (
        stub as unknown as { work(metadata: grpc.Metadata): grpc.ClientDuplexStream<WorkRequest, WorkResponse> }
      ).work(new grpc.Metadata());
      const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
      call.on('error', () => {});
      const messages: WorkResponse[] = [];
      let arrived: (() => void) | null = null;
      call.on('data', (message: WorkResponse) => {
        messages.push(message);
        arrived?.();
      });
      const until = async (done: () => boolean): Promise<void> => {
        while (!done()) await new Promise<void>((resolve) => (arrived = resolve));
      };
      const jobsIn = (): number => messages.reduce((n, m) => n + m.jobs.length, 0);
      try {
        call.write(
          create(WorkRequestSchema, { open: { workerId: 'w1', kinds: ['pair'], jobsWithAnswers }, credit: 1 }),
        );
        await until(() => jobsIn() === 1);
        const first = messages[0]?.jobs[0];
        assert.ok(first);
        const fence = { jobId: first.jobId, workerId: 'w1', leaseGeneration: first.leaseGeneration };
        // A worker without prefetch: the result and the slot it freed, in one message.
        call.write(create(WorkRequestSchema, { credit: 1, settleId: 1n, completes: [{ fence }] }));
        await until(() => jobsIn() === 2 && messages.some((m) => m.settleId === 1n));
        const after = messages.slice(1);
        const answer = after.find((m) => m.settleId === 1n);
        assert.equal(answer?.completeOutcomes.length, 1);
        assert.equal(answer?.completeOutcomes[0]?.code, 0);
        // The completion and the next lease land in one write: both are ready in one turn.
        const shapes = after.map((m) => `${m.jobs.length} job(s), settle ${m.settleId}`).sort();
        assert.deepEqual(
          shapes,
          jobsWithAnswers ? ['1 job(s), settle 1'] : ['0 job(s), settle 1', '1 job(s), settle 0'],
        );
      } finally {
        call.end();
        assert.equal((await ended).code, grpc.status.OK);
        stub.close();
      }
    });
  }

  it('answers each result on its own: accepted, stale fence, unknown job, failure', async () => {
    await client.enqueueBatch(
      Array.from({ length: 3 }, () => ({ kind: 'settle' })),
      acme,
    );
    const work = openWork(client, { workerId: 'w1' });
    work.channel.grant(3);
    const [a, b, c] = await work.received(3);
    assert.ok(a && b && c);
    const fence = (job: typeof a, workerId = 'w1') => ({ workerId, leaseGeneration: job.leaseGeneration });
    const outcomes = await Promise.allSettled([
      work.channel.settle({ type: 'complete', jobId: a.jobId, fence: fence(a), successors: [{ kind: 'next' }] }),
      work.channel.settle({ type: 'complete', jobId: b.jobId, fence: fence(b, 'someone-else'), successors: [] }),
      work.channel.settle({ type: 'complete', jobId: UNKNOWN_JOB, fence: fence(b), successors: [] }),
      work.channel.settle({ type: 'fail', jobId: c.jobId, fence: fence(c), error: 'boom', permanent: true }),
    ]);
    assert.equal(outcomes[0].status, 'fulfilled');
    assert.equal(outcomes[1].status, 'rejected');
    assert.ok(outcomes[1].reason instanceof LeaseConflictError);
    assert.equal(outcomes[1].reason.reason, 'worker_mismatch');
    assert.equal(outcomes[2].status, 'rejected');
    assert.ok(outcomes[2].reason instanceof TelhaError);
    assert.equal(outcomes[2].reason.code, ErrorCode.NotFound, outcomes[2].reason.message);
    assert.equal(outcomes[3].status, 'fulfilled');

    assert.equal((await client.show(a.jobId)).state, JobState.Completed);
    assert.equal((await client.show(b.jobId)).state, JobState.Leased);
    assert.equal((await client.show(c.jobId)).state, JobState.Dead);
    assert.equal((await client.list({ scope: acme, kindPrefix: 'next' })).jobs.length, 1);
    work.channel.end();
    await work.ended;
  });

  /** Two jobs of `kind`, enqueued and pushed to worker w1 on a stream of its own. */
  async function twoPushed(kind: string) {
    await client.enqueueBatch([{ kind }, { kind }], acme);
    const work = openWork(client, { workerId: 'w1', kinds: [kind] });
    work.channel.grant(2);
    const [a, b] = await work.received(2);
    assert.ok(a && b);
    return { work, a, b };
  }

  it('extends leases on the stream: each heartbeat and checkpoint answered on its own, with its deadline', async () => {
    const { work, a, b } = await twoPushed('extend');
    const fence = (job: typeof a, workerId = 'w1') => ({ workerId, leaseGeneration: job.leaseGeneration });
    const continuation = new TextEncoder().encode('page=7');
    const outcomes = await Promise.allSettled([
      work.channel.extend({ type: 'heartbeat', jobId: a.jobId, fence: fence(a), progress: '{"done":3}' }),
      work.channel.extend({ type: 'checkpoint', jobId: b.jobId, fence: fence(b), continuation }),
      work.channel.extend({ type: 'heartbeat', jobId: b.jobId, fence: fence(b, 'someone-else') }),
      work.channel.extend({ type: 'checkpoint', jobId: UNKNOWN_JOB, fence: fence(b), continuation }),
      work.channel.extend({ type: 'heartbeat', jobId: a.jobId, fence: fence(a), progress: 'not json' }),
    ]);
    const [heartbeat, checkpoint, stranger, unknown, badProgress] = outcomes;
    assert.equal(heartbeat?.status, 'fulfilled');
    assert.equal(checkpoint?.status, 'fulfilled');
    const shownA = await client.show(a.jobId);
    const shownB = await client.show(b.jobId);
    assert.equal(heartbeat.value, shownA.leaseDeadline, 'answered with the lease deadline the store wrote');
    assert.equal(checkpoint.value, shownB.leaseDeadline);
    assert.equal(shownA.progress, '{"done":3}');
    assert.equal(new TextDecoder().decode(shownB.continuation ?? new Uint8Array()), 'page=7');
    assert.equal(stranger?.status, 'rejected');
    assert.ok(stranger.reason instanceof LeaseConflictError);
    assert.equal(stranger.reason.reason, 'worker_mismatch');
    assert.equal(unknown?.status, 'rejected');
    assert.equal((unknown.reason as TelhaError).code, ErrorCode.NotFound);
    assert.equal(badProgress?.status, 'rejected');
    assert.equal((badProgress.reason as TelhaError).code, ErrorCode.InvalidArgument);
    assert.equal((badProgress.reason as TelhaError).field, 'progress');
    assert.deepEqual(
      shownA.events.map((e) => e.transition),
      ['enqueued', 'leased', 'progress'],
      'one progress event in the trail, nothing for the refused one',
    );
    work.channel.end();
    await work.ended;
  });

  it('answers each release on its own, and a released job is pushed again at once', async () => {
    const { work, a, b } = await twoPushed('back');
    const outcomes = await Promise.allSettled([
      work.channel.settle({ type: 'release', jobId: a.jobId, fence: { workerId: 'w1', leaseGeneration: 1 } }),
      work.channel.settle({ type: 'release', jobId: b.jobId, fence: { workerId: 'w1', leaseGeneration: 2 } }),
    ]);
    assert.equal(outcomes[0].status, 'fulfilled');
    assert.equal(outcomes[1].status, 'rejected');
    assert.ok(outcomes[1].reason instanceof LeaseConflictError);
    assert.equal(outcomes[1].reason.reason, 'generation_superseded');
    const released = await client.show(a.jobId);
    assert.equal(released.state, JobState.Pending);
    assert.equal(released.attempts, 0);
    assert.equal(released.events.at(-1)?.transition, 'released');
    work.channel.grant(1);
    const [, , again] = await work.received(3);
    assert.equal(again?.jobId, a.jobId);
    assert.equal(again.leaseGeneration, 2);
    work.channel.end();
    await work.ended;
  });

  it('ends cleanly when the server shuts down, after answering the results it has', async () => {
    await client.enqueue({ kind: 'last' }, acme);
    const work = openWork(client, { workerId: 'w1' });
    work.channel.grant(5);
    const [job] = await work.received(1);
    assert.ok(job);
    const settled = work.channel.settle({
      type: 'complete',
      jobId: job.jobId,
      fence: { workerId: 'w1', leaseGeneration: job.leaseGeneration },
      successors: [],
    });
    await settled;
    const closing = server.close();
    assert.equal(await work.ended, null);
    await closing;
    // Re-open a server for afterEach to close.
    server = await startTestServer();
  });

  it('refuses a stream whose first message does not open it, naming the field', async () => {
    const status = await rawStream(server.address, [{ credit: 1 }]);
    assert.equal(status.code, Status.INVALID_ARGUMENT);
    assert.equal(status.metadata.get(FIELD_HEADER)[0], 'open');
  });

  it('refuses credit beyond 10,000 outstanding, and results without a settle id', async () => {
    const tooMuch = await rawStream(server.address, [{ open: { workerId: 'w1' }, credit: 10_001 }]);
    assert.equal(tooMuch.code, Status.INVALID_ARGUMENT);
    assert.equal(tooMuch.metadata.get(FIELD_HEADER)[0], 'credit');

    const fence = { jobId: UNKNOWN_JOB, workerId: 'w1', leaseGeneration: 1n };
    const noId = await rawStream(server.address, [{ open: { workerId: 'w1' }, completes: [{ fence }] }]);
    assert.equal(noId.code, Status.INVALID_ARGUMENT);
    assert.equal(noId.metadata.get(FIELD_HEADER)[0], 'settle_id');
  });

  it('refuses an invalid worker id when the stream opens', async () => {
    const status = await rawStream(server.address, [{ open: { workerId: '' }, credit: 1 }]);
    assert.equal(status.code, Status.INVALID_ARGUMENT);
    assert.equal(status.metadata.get(FIELD_HEADER)[0], 'open.worker_id');
  });
});
