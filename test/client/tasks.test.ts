/**
 * Typed tasks without a server: validation through any Standard Schema (zod here, and a
 * hand-written async one), the field an issue names, the JSON codec both ways, and what a
 * worker refuses of its tasks.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { defineTask, jsonCodec, PermanentError, type JobContext, type TaskJob } from '../../src/client/index.ts';
import type { StandardSchemaV1 } from '../../src/client/standard-schema.ts';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { WorkerRunner } from '../../src/worker/runner.ts';
import type { WorkSource } from '../../src/worker/source.ts';

const email = defineTask(
  'email.send',
  z.object({ to: z.email(), subject: z.string().default('(none)'), cc: z.array(z.email()).optional() }),
);
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

/** Rejects with `invalid_argument` naming `field`, and returns the error. */
async function refused(promise: Promise<unknown>, field: string): Promise<TelhaError> {
  const error = await promise.then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof TelhaError);
  assert.equal(error.code, ErrorCode.InvalidArgument);
  assert.equal(error.field, field);
  return error;
}

describe('typed tasks', () => {
  it('parses valid data to the schema output (defaults filled)', async () => {
    assert.deepEqual(await email.parse({ to: 'ann@example.com' }), { to: 'ann@example.com', subject: '(none)' });
    assert.equal(email.kind, 'email.send');
  });

  it('refuses invalid data with invalid_argument naming the field under payload', async () => {
    const error = await refused(email.parse({ to: 'nope' }), 'payload.to');
    assert.match(error.message, /^task email\.send: payload\.to: /);
    await refused(email.parse({ to: 'ann@example.com', cc: ['ann@example.com', 'x'] }), 'payload.cc[1]');
    await refused(email.parse('a string'), 'payload');
  });

  it('lists every issue in the message, the first one as the field', async () => {
    const two = defineTask('two', z.object({ a: z.number(), b: z.number() }));
    const error = await refused(two.parse({}), 'payload.a');
    assert.match(error.message, /payload\.a: .*; payload\.b: /);
  });

  it('takes an async Standard Schema of any vendor', async () => {
    const schema: StandardSchemaV1<{ n: number }, number> = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: (value) => {
          const n = (value as { n?: unknown } | null)?.n;
          return Promise.resolve(
            typeof n === 'number' ? { value: n * 2 } : { issues: [{ message: 'not a number', path: [{ key: 'n' }] }] },
          );
        },
      },
    };
    const double = defineTask('double', schema);
    assert.equal(await double.parse({ n: 21 }), 42);
    await refused(double.parse({ n: 'x' }), 'payload.n');
    assert.equal(await double.decode(double.encode({ n: 2 })), 4);
  });

  it('refuses a schema that is not a Standard Schema', () => {
    assert.throws(() => defineTask('bad', {} as StandardSchemaV1), TypeError);
  });

  it('encodes data as JSON UTF-8 and decodes it back, validated', async () => {
    const payload = email.encode({ to: 'ann@example.com', subject: 'é' });
    assert.equal(new TextDecoder().decode(payload), '{"to":"ann@example.com","subject":"é"}');
    assert.deepEqual(jsonCodec.decode(payload), { to: 'ann@example.com', subject: 'é' });
    assert.deepEqual(await email.decode(bytes('{"to":"ann@example.com","subject":"hi"}')), {
      to: 'ann@example.com',
      subject: 'hi',
    });
    await refused(email.decode(bytes('{"to":1}')), 'payload.to');
    const error = await refused(email.decode(bytes('{not json')), 'payload');
    assert.match(error.message, /does not decode/);
    await refused(email.decode(new Uint8Array([0xff, 0xfe])), 'payload');
  });

  it('takes another codec', async () => {
    const text = defineTask('text', z.string(), {
      codec: { encode: (value) => bytes(String(value)), decode: (b) => new TextDecoder().decode(b) },
    });
    assert.equal(await text.decode(text.encode('plain')), 'plain');
  });

  it('validates before enqueueing, and sends the kind and the JSON payload', async () => {
    const sent: unknown[] = [];
    const producer = {
      enqueue: (job: unknown, scope?: unknown) => {
        sent.push([job, scope]);
        return Promise.resolve({ job: { jobId: 'j1' } as never, created: true });
      },
    };
    await refused(email.enqueue(producer, { to: 'nope' }), 'payload.to');
    assert.equal(sent.length, 0);
    await email.enqueue(producer, { to: 'ann@example.com' }, { priority: 3 });
    assert.deepEqual(sent, [
      [{ priority: 3, kind: 'email.send', payload: bytes('{"to":"ann@example.com"}') }, undefined],
    ]);
  });

  it('handles a job with its data typed, and fails an invalid payload permanently', async () => {
    const seen: string[] = [];
    const handler = email.handle(
      (job: TaskJob<{ to: string; subject: string }>) => {
        seen.push(`${job.jobId} ${job.data.to} ${job.data.subject}`);
        return Promise.resolve(job.data.to);
      },
      { concurrency: 2 },
    );
    assert.equal(handler.kind, 'email.send');
    assert.equal(handler.concurrency, 2);
    const job = (payload: string): JobContext => ({ jobId: 'j1', payload: bytes(payload) }) as unknown as JobContext;
    assert.equal(await handler.handler(job('{"to":"ann@example.com"}')), 'ann@example.com');
    assert.deepEqual(seen, ['j1 ann@example.com (none)']);
    await assert.rejects(handler.handler(job('{"to":"x"}')), (error: unknown) => {
      assert.ok(error instanceof PermanentError);
      assert.match(error.message, /^invalid payload: task email\.send: payload\.to: /);
      return true;
    });
    assert.deepEqual(seen, ['j1 ann@example.com (none)']);
  });

  it('makes a worker refuse tasks it cannot serve', () => {
    const source = {} as WorkSource;
    const task = email.handle(() => Promise.resolve());
    assert.throws(() => new WorkerRunner(source, {}), /needs a handler, or tasks/);
    assert.throws(() => new WorkerRunner(source, { tasks: [task, task] }), /two tasks of kind email\.send/);
    assert.throws(
      () => new WorkerRunner(source, { tasks: [email.handle(() => Promise.resolve(), { concurrency: 0 })] }),
      /task email\.send: concurrency must be a positive integer/,
    );
  });
});
