/**
 * Requests that are not valid protobuf, sent as raw bytes over a real socket: each is refused
 * with INVALID_ARGUMENT (not grpc-js's INTERNAL "Error deserializing request") and counted in
 * telha_grpc_calls_total like any other call, on unary calls and on every stream alike.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { create, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { TelhaClient } from '../../src/client/client.ts';
import { tenantScope } from '../../src/core/types.ts';
import { ProduceRequestSchema, WorkRequestSchema } from '../../src/gen/telha/v1/queue_pb.ts';
import { Status } from '../../src/wire/service.ts';
import { parseMetrics } from '../support/http.ts';
import { liveServer } from '../support/server.ts';

/** Field 1 with wire type 7, which protobuf does not have. */
const GARBAGE = Buffer.from([0x0f, 0xff, 0xff]);
/** Field 1 (ShowRequest.job_id, a string) holding 0xc3 0x28: not UTF-8. */
const JOB_ID_NOT_UTF8 = Buffer.from([0x0a, 0x02, 0xc3, 0x28]);

/** A Work stream's valid first message. */
const WORK_OPEN = Buffer.from(toBinary(WorkRequestSchema, create(WorkRequestSchema, { open: { workerId: 'w1' } })));
/** A valid enqueue on a Produce stream. */
const PRODUCE_ONE = Buffer.from(
  toBinary(
    ProduceRequestSchema,
    create(ProduceRequestSchema, {
      id: 1n,
      enqueue: { case: 'single', value: { scope: { target: { case: 'tenant', value: 'acme' } }, job: { kind: 'k' } } },
    }),
  ),
);

const bytes = (value: Buffer): Buffer => value;
const path = (method: string): string => `/telha.v1.QueueService/${method}`;

/** The status a call ended with: its code and details. */
interface Ended {
  readonly code: number;
  readonly details: string;
}

describe('requests that do not decode', () => {
  const { server } = liveServer();
  let raw: grpc.Client;

  before(() => {
    raw = new grpc.Client(server.address, grpc.credentials.createInsecure());
  });
  after(() => {
    raw.close();
  });

  function unary(method: string, request: Buffer): Promise<Ended> {
    return new Promise((resolve) => {
      raw.makeUnaryRequest(path(method), bytes, bytes, request, (error) => {
        resolve(error === null ? { code: Status.OK, details: '' } : error);
      });
    });
  }

  /** Open a stream, write `messages` and resolve with the status it ends with. */
  function stream(method: 'Work' | 'Produce' | 'Watch', messages: readonly Buffer[]): Promise<Ended> {
    return new Promise((resolve) => {
      const call =
        method === 'Watch'
          ? raw.makeServerStreamRequest(path(method), bytes, bytes, messages[0] ?? Buffer.alloc(0))
          : raw.makeBidiStreamRequest(path(method), bytes, bytes);
      call.on('data', () => undefined);
      call.on('status', (status: grpc.StatusObject) => resolve(status));
      call.on('error', () => undefined);
      if (method !== 'Watch') {
        const writable = call as grpc.ClientDuplexStream<Buffer, Buffer>;
        for (const message of messages) writable.write(message);
      }
    });
  }

  async function callsCounted(method: string, code: string): Promise<number> {
    const reply = await fetch(`${server.http}/metrics`);
    return parseMetrics(await reply.text()).value('telha_grpc_calls_total', { method, code });
  }

  it('refuses bytes that are not a message as INVALID_ARGUMENT, naming the message, and counts the call', async () => {
    const ended = await unary('Counts', GARBAGE);
    assert.equal(ended.code, Status.INVALID_ARGUMENT, ended.details);
    assert.match(ended.details, /^the request is not a valid telha\.v1\.CountsRequest: /);
    assert.equal(await callsCounted('counts', 'INVALID_ARGUMENT'), 1);
  });

  it('refuses a string field that is not UTF-8 as INVALID_ARGUMENT, and counts the call', async () => {
    const ended = await unary('Show', JOB_ID_NOT_UTF8);
    assert.equal(ended.code, Status.INVALID_ARGUMENT, ended.details);
    assert.match(ended.details, /^the request is not a valid telha\.v1\.ShowRequest: /);
    assert.equal(await callsCounted('show', 'INVALID_ARGUMENT'), 1);
  });

  it('refuses a Watch whose request does not decode, and counts the stream', async () => {
    const ended = await stream('Watch', [GARBAGE]);
    assert.equal(ended.code, Status.INVALID_ARGUMENT, ended.details);
    assert.match(ended.details, /telha\.v1\.WatchRequest/);
    assert.equal(await callsCounted('watch', 'INVALID_ARGUMENT'), 1);
  });

  it('ends a Work stream whose message after the open does not decode, and counts the stream', async () => {
    const ended = await stream('Work', [WORK_OPEN, GARBAGE]);
    assert.equal(ended.code, Status.INVALID_ARGUMENT, ended.details);
    assert.match(ended.details, /telha\.v1\.WorkRequest/);
    assert.equal(await callsCounted('work', 'INVALID_ARGUMENT'), 1);
  });

  it('ends a Produce stream whose message after an enqueue does not decode, and counts the stream', async () => {
    const ended = await stream('Produce', [PRODUCE_ONE, GARBAGE]);
    assert.equal(ended.code, Status.INVALID_ARGUMENT, ended.details);
    assert.match(ended.details, /telha\.v1\.ProduceRequest/);
    assert.equal(await callsCounted('produce', 'INVALID_ARGUMENT'), 1);
  });

  it('keeps serving valid calls afterwards', async () => {
    const client = new TelhaClient({ address: server.address });
    try {
      const { created } = await client.enqueue({ kind: 'fine' }, tenantScope('acme'));
      assert.equal(created, true);
    } finally {
      client.close();
    }
  });
});
