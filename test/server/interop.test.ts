/**
 * Any gRPC client must be able to use the API: here a plain @grpc/grpc-js
 * client that loads the .proto files at run time, with no generated code and
 * none of the SDK, enqueues, leases and completes a job, by unary calls and
 * over the Work stream.
 */
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return --
   proto-loader builds the client from the .proto file at run time: untyped by design, which is the point here. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { queueServiceFromProto } from '../support/proto-client.ts';
import { liveServer } from '../support/server.ts';

type Unary = (
  request: object,
  metadata: grpc.Metadata,
  callback: (error: grpc.ServiceError | null, response: any) => void,
) => void;

describe('a plain grpc-js client loading the .proto files', () => {
  const { server } = liveServer();
  let stub: Record<string, Unary>;
  const call = (method: string, request: object): Promise<any> =>
    new Promise((resolve, reject) => {
      (stub[method] as Unary).call(stub, request, new grpc.Metadata(), (error, response) =>
        error ? reject(error) : resolve(response),
      );
    });

  before(() => {
    stub = queueServiceFromProto(server.address) as unknown as Record<string, Unary>;
  });
  after(() => {
    (stub as unknown as grpc.Client).close();
  });

  it('enqueues, leases and completes a job', async () => {
    const enqueued = await call('Enqueue', {
      scope: { tenant: 'acme' },
      job: { kind: 'interop', payload: Buffer.from('hello'), priority: 3 },
    });
    assert.equal(enqueued.result.created, true);
    const jobId: string = enqueued.result.job.job_id;
    assert.equal(enqueued.result.job.state, 'JOB_STATE_PENDING');

    const leased = await call('Lease', { worker_id: 'grpc-js', kinds: ['interop'], max_jobs: 1, wait_ms: 0 });
    assert.equal(leased.jobs.length, 1);
    assert.equal(leased.jobs[0].job_id, jobId);
    assert.equal(Buffer.from(leased.jobs[0].payload).toString(), 'hello');
    const generation: string = leased.jobs[0].lease_generation;
    assert.equal(generation, '1');

    const done = await call('Complete', {
      fence: { job_id: jobId, worker_id: 'grpc-js', lease_generation: generation },
    });
    assert.equal(done.job.state, 'JOB_STATE_COMPLETED');
  });

  it('works a job over the Work stream: open with credit, receive the job, complete it, get its outcome', async () => {
    const enqueued = await call('Enqueue', { scope: { tenant: 'acme' }, job: { kind: 'streamed' } });
    const jobId: string = enqueued.result.job.job_id;
    const work = (stub as unknown as Record<string, (metadata: grpc.Metadata) => grpc.ClientDuplexStream<any, any>>)[
      'Work'
    ] as (metadata: grpc.Metadata) => grpc.ClientDuplexStream<any, any>;
    const stream = work.call(stub, new grpc.Metadata());
    const inbox: any[] = [];
    let arrived: (() => void) | null = null;
    stream.on('data', (message: any) => {
      inbox.push(message);
      arrived?.();
    });
    const next = async (): Promise<any> => {
      while (inbox.length === 0) await new Promise<void>((resolve) => (arrived = resolve));
      return inbox.shift();
    };
    const status = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
    stream.on('error', () => {});

    stream.write({ open: { worker_id: 'grpc-js', kinds: ['streamed'] }, credit: 1 });
    const pushed = await next();
    assert.equal(pushed.jobs.length, 1);
    assert.equal(pushed.jobs[0].job_id, jobId);
    assert.equal(pushed.jobs[0].state, 'JOB_STATE_LEASED');

    const fence = { job_id: jobId, worker_id: 'grpc-js', lease_generation: pushed.jobs[0].lease_generation };
    stream.write({ settle_id: '7', completes: [{ fence }, { fence: { ...fence, worker_id: 'intruder' } }] });
    const answered = await next();
    assert.equal(answered.settle_id, '7');
    assert.deepEqual(
      answered.complete_outcomes.map((o: any) => o.code),
      [grpc.status.OK, grpc.status.ABORTED],
    );
    assert.equal(answered.complete_outcomes[1].reason, 'worker_mismatch');
    stream.end();
    assert.equal((await status).code, grpc.status.OK);
    const shown = await call('Show', { job_id: jobId });
    assert.equal(shown.job.state, 'JOB_STATE_COMPLETED');
  });

  it('hands a leased job back with Release: pending at once, no attempt charged, leasable by the next worker', async () => {
    const enqueued = await call('Enqueue', { scope: { tenant: 'acme' }, job: { kind: 'handback' } });
    const jobId: string = enqueued.result.job.job_id;
    const leased = await call('Lease', { worker_id: 'grpc-js', kinds: ['handback'], limit: 1 });
    const fence = { job_id: jobId, worker_id: 'grpc-js', lease_generation: leased.jobs[0].lease_generation };
    const released = await call('Release', { fence });
    assert.equal(released.job.state, 'JOB_STATE_PENDING');
    assert.equal(released.job.attempts, 0);
    assert.equal(released.job.events.at(-1).transition, 'released');
    const again = await call('Lease', { worker_id: 'next', kinds: ['handback'], limit: 1 });
    assert.equal(again.jobs[0].job_id, jobId);
    assert.equal(again.jobs[0].lease_generation, '2');
    const each = await call('ReleaseEach', { items: [{ fence }] });
    assert.equal(each.outcomes[0].code, grpc.status.ABORTED);
    assert.equal(each.outcomes[0].reason, 'worker_mismatch');
  });

  it('reports progress with Heartbeat and a result with Complete, and Show returns both', async () => {
    const enqueued = await call('Enqueue', { scope: { tenant: 'acme' }, job: { kind: 'resulting' } });
    const jobId: string = enqueued.result.job.job_id;
    const leased = await call('Lease', { worker_id: 'grpc-js', kinds: ['resulting'], limit: 1 });
    const fence = { job_id: jobId, worker_id: 'grpc-js', lease_generation: leased.jobs[0].lease_generation };
    await call('Heartbeat', { fence, progress: '{"done":1,"of":2}' });
    await assert.rejects(call('Complete', { fence, result: Buffer.alloc(65_537) }), (error: grpc.ServiceError) => {
      assert.equal(error.code, grpc.status.INVALID_ARGUMENT);
      assert.deepEqual(error.metadata.get('telha-field'), ['result']);
      return true;
    });
    await call('Complete', { fence, result: Buffer.from('{"rows":2}') });
    const shown = await call('Show', { job_id: jobId });
    assert.equal(shown.job.state, 'JOB_STATE_COMPLETED');
    assert.equal(Buffer.from(shown.job.result).toString(), '{"rows":2}');
    assert.equal(shown.job.progress, '{"done":1,"of":2}');
    assert.deepEqual(
      shown.job.events.map((e: any) => e.transition),
      ['enqueued', 'leased', 'progress', 'completed'],
    );
  });

  it('gets ABORTED with the reason in metadata for a stale submission', async () => {
    const enqueued = await call('Enqueue', { scope: { tenant: 'acme' }, job: { kind: 'stale' } });
    const jobId: string = enqueued.result.job.job_id;
    await call('Lease', { worker_id: 'a', kinds: ['stale'], max_jobs: 1 });
    await assert.rejects(
      call('Complete', { fence: { job_id: jobId, worker_id: 'b', lease_generation: '1' } }),
      (error: grpc.ServiceError) => {
        assert.equal(error.code, grpc.status.ABORTED);
        assert.deepEqual(error.metadata.get('telha-reason'), ['worker_mismatch']);
        return true;
      },
    );
  });

  it('gets INVALID_ARGUMENT naming the field for bad input', async () => {
    await assert.rejects(
      call('Enqueue', { scope: { tenant: 'acme' }, job: { kind: '', priority: 1 } }),
      (error: grpc.ServiceError) => {
        assert.equal(error.code, grpc.status.INVALID_ARGUMENT);
        assert.deepEqual(error.metadata.get('telha-field'), ['kind']);
        return true;
      },
    );
  });

  it('enqueues several jobs each on its own with EnqueueEach: one answer per job, in order', async () => {
    const response = await call('EnqueueEach', {
      scope: { tenant: 'acme' },
      jobs: [{ kind: 'each-a' }, { kind: 'bad kind' }, { kind: 'each-b', priority: 7 }],
    });
    assert.equal(response.answers.length, 3);
    assert.equal(response.answers[0].result.job.kind, 'each-a');
    assert.equal(response.answers[0].error, undefined);
    assert.equal(response.answers[1].result, undefined);
    assert.equal(response.answers[1].error.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(response.answers[1].error.field, 'kind');
    assert.equal(response.answers[2].result.job.priority, 7);
    const shown = await call('Show', { job_id: response.answers[2].result.job.job_id });
    assert.equal(shown.job.state, 'JOB_STATE_PENDING');
  });
});
