/**
 * Any gRPC client must be able to use the API: here a plain @grpc/grpc-js
 * client that loads the .proto files at run time, with no generated code and
 * none of the SDK, enqueues, leases and completes a job.
 */
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-call --
   proto-loader builds the client from the .proto file at run time: untyped by design, which is the point here. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { startTestServer, type TestServer } from '../support/server.ts';

type Unary = (
  request: object,
  metadata: grpc.Metadata,
  callback: (error: grpc.ServiceError | null, response: any) => void,
) => void;

const definition = protoLoader.loadSync(fileURLToPath(new URL('../../proto/telha/v1/queue.proto', import.meta.url)), {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
});
const proto = grpc.loadPackageDefinition(definition) as any;

describe('a plain grpc-js client loading the .proto files', () => {
  let server: TestServer;
  let stub: Record<string, Unary>;
  const call = (method: string, request: object): Promise<any> =>
    new Promise((resolve, reject) => {
      (stub[method] as Unary).call(stub, request, new grpc.Metadata(), (error, response) =>
        error ? reject(error) : resolve(response),
      );
    });

  before(async () => {
    server = await startTestServer();
    stub = new proto.telha.v1.QueueService(server.address, grpc.credentials.createInsecure());
  });
  after(async () => {
    (stub as unknown as grpc.Client).close();
    await server.close();
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
});
