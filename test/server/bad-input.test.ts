/**
 * Bad input over the wire gets INVALID_ARGUMENT (or the code the issue names)
 * with the field named, and leaves the store exactly as it was.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { tenantScope } from '../../src/core/types.ts';
import { liveServer } from '../support/server.ts';

const acme = tenantScope('acme');
const UNKNOWN_ID = '01890a5d-ac96-774b-bcce-b302099a8057';

describe('bad input over the wire', () => {
  const { client } = liveServer({ jobs: { max_payload_bytes: 1024 } });
  let pendingId: string;

  /** Everything the store holds, to compare before and after a refused call. */
  async function snapshot(): Promise<string> {
    const jobs = await client.list({ limit: 1000 });
    return JSON.stringify({ counts: await client.counts(), jobs: jobs.jobs });
  }

  before(async () => {
    pendingId = (await client.enqueue({ kind: 'existing' }, acme)).job.jobId;
  });

  /** Open a Watch: resolves once it is open (and stops it), rejects with its refusal. */
  async function firstWatch(options: { kindPrefix: string }): Promise<void> {
    const stop = new AbortController();
    const watch = client.watch({ scope: acme, ...options, signal: stop.signal, onOpen: () => stop.abort() });
    for await (const event of watch) assert.fail(`no event was due, got ${event.transition}`);
  }

  const fence = { workerId: 'w1', leaseGeneration: 1 };
  const cases: [string, () => Promise<unknown>, ErrorCode, string | null][] = [
    ['an empty kind', () => client.enqueue({ kind: '' }, acme), ErrorCode.InvalidArgument, 'kind'],
    ['a kind over 255 bytes', () => client.enqueue({ kind: 'k'.repeat(256) }, acme), ErrorCode.InvalidArgument, 'kind'],
    [
      'a payload over the cap',
      () => client.enqueue({ kind: 'k', payload: new Uint8Array(1025) }, acme),
      ErrorCode.InvalidArgument,
      'payload',
    ],
    ['priority 256', () => client.enqueue({ kind: 'k', priority: 256 }, acme), ErrorCode.InvalidArgument, 'priority'],
    ['a negative delay', () => client.enqueue({ kind: 'k', delayMs: -5 }, acme), ErrorCode.InvalidArgument, 'delay_ms'],
    [
      'max_attempts 0',
      () => client.enqueue({ kind: 'k', maxAttempts: 0 }, acme),
      ErrorCode.InvalidArgument,
      'max_attempts',
    ],
    [
      'an over-long idempotency key',
      () => client.enqueue({ kind: 'k', idempotencyKey: 'i'.repeat(256) }, acme),
      ErrorCode.InvalidArgument,
      'idempotency_key',
    ],
    [
      'an empty tenant',
      () => client.enqueue({ kind: 'k' }, tenantScope('')),
      ErrorCode.InvalidArgument,
      'scope.tenant',
    ],
    [
      'a batch with one bad job',
      () => client.enqueueBatch([{ kind: 'ok' }, { kind: 'bad', priority: 999 }], acme),
      ErrorCode.InvalidArgument,
      'jobs[1].priority',
    ],
    ['a malformed job id to show', () => client.show('not-a-uuid'), ErrorCode.InvalidArgument, 'job_id'],
    ['a malformed job id to complete', () => client.complete('zzz', fence), ErrorCode.InvalidArgument, 'job_id'],
    ['an empty worker id', () => client.lease({ workerId: '' }), ErrorCode.InvalidArgument, 'worker_id'],
    [
      'too many jobs in one lease',
      () => client.lease({ workerId: 'w', limit: 5_000 }),
      ErrorCode.InvalidArgument,
      'limit',
    ],
    ['a bad list page size', () => client.list({ limit: 5_000 }), ErrorCode.InvalidArgument, 'limit'],
    ['a bad page token', () => client.list({ pageToken: 'not hex!' }), ErrorCode.InvalidArgument, 'page_token'],
    [
      'a page token of the wrong length',
      () => client.list({ pageToken: 'abcd' }),
      ErrorCode.InvalidArgument,
      'page_token',
    ],
    [
      'a result over jobs.max_result_bytes',
      () => client.complete(pendingId, fence, { result: new Uint8Array(65_537) }),
      ErrorCode.InvalidArgument,
      'result',
    ],
    [
      'progress that is not JSON text',
      () => client.heartbeat(pendingId, fence, { progress: '{' }),
      ErrorCode.InvalidArgument,
      'progress',
    ],
    [
      'progress over 4,096 characters',
      () => client.heartbeat(pendingId, fence, { progress: `"${'x'.repeat(4_095)}"` }),
      ErrorCode.InvalidArgument,
      'progress',
    ],
    [
      'a cron of 7 fields (croner would read the 7th as a year)',
      () => client.createSchedule({ name: 'yearly', cron: '* * * * * * *', job: { kind: 'k' } }, acme),
      ErrorCode.InvalidArgument,
      'cron',
    ],
    [
      'a kind prefix to list with whitespace in it',
      () => client.list({ kindPrefix: 'email bulk' }),
      ErrorCode.InvalidArgument,
      'kind_prefix',
    ],
    [
      'a kind prefix to cancel over 255 bytes',
      () => client.cancelMatching({ scope: acme, kindPrefix: 'k'.repeat(256) }),
      ErrorCode.InvalidArgument,
      'kind_prefix',
    ],
    [
      'a 1 MiB kind prefix to watch',
      () => firstWatch({ kindPrefix: 'k'.repeat(1024 * 1024) }),
      ErrorCode.InvalidArgument,
      'kind_prefix',
    ],
    [
      'a kind prefix to watch that starts with whitespace',
      () => firstWatch({ kindPrefix: ' email' }),
      ErrorCode.InvalidArgument,
      'kind_prefix',
    ],
    ['an unknown job id to show', () => client.show(UNKNOWN_ID), ErrorCode.NotFound, null],
    ['an unknown job id to complete', () => client.complete(UNKNOWN_ID, fence), ErrorCode.NotFound, null],
    ['an unknown job id to retry', () => client.retry(UNKNOWN_ID), ErrorCode.NotFound, null],
    ['a submit for a job that is not leased', () => client.complete(pendingId, fence), ErrorCode.LeaseConflict, null],
    ['a retry of a job that is not dead', () => client.retry(pendingId), ErrorCode.FailedPrecondition, null],
    ['an operator enqueue without a scope', () => client.enqueue({ kind: 'k' }), ErrorCode.InvalidArgument, 'scope'],
  ];

  for (const [what, call, code, field] of cases) {
    it(`answers ${what} with ${code}${field ? ` naming ${field}` : ''}, and changes nothing`, async () => {
      const before = await snapshot();
      await assert.rejects(call(), (error: unknown) => {
        assert.ok(error instanceof TelhaError, String(error));
        assert.equal(error.code, code, error.message);
        if (field !== null) assert.equal(error.field, field);
        return true;
      });
      assert.equal(await snapshot(), before);
    });
  }

  it('keeps serving after all of that', async () => {
    const { created } = await client.enqueue({ kind: 'fine' }, acme);
    assert.equal(created, true);
  });
});
