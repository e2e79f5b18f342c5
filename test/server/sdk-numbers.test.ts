/**
 * Numbers the wire cannot carry (a negative or fractional value for an unsigned field, one past
 * its type's range, NaN) are refused by the SDK as `invalid_argument` naming the field, before
 * anything is sent: never protobuf-es's "invalid uint32: -1" reported as an INTERNAL call.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { tenantScope } from '../../src/core/types.ts';
import { parseMetrics } from '../support/http.ts';
import { liveServer } from '../support/server.ts';

const acme = tenantScope('acme');
const JOB_ID = '01890a5d-ac96-774b-bcce-b302099a8057';
const TOO_BIG = 2 ** 32;

describe('numbers the SDK sends', () => {
  const { server, client } = liveServer();

  /** Every gRPC call the server has counted, whatever its method and code. */
  async function callsServed(): Promise<number> {
    const text = await (await fetch(`${server.http}/metrics`)).text();
    const family = parseMetrics(text).families.get('telha_grpc_calls_total');
    return (family?.metrics ?? []).reduce((sum, sample) => sum + Number(sample.value ?? 0), 0);
  }

  const fence = (leaseGeneration: number) => ({ workerId: 'w1', leaseGeneration });
  const cases: [string, () => Promise<unknown>, string][] = [
    ['enqueue with maxAttempts -1', () => client.enqueue({ kind: 'k', maxAttempts: -1 }, acme), 'max_attempts'],
    ['enqueue with priority 2^32', () => client.enqueue({ kind: 'k', priority: TOO_BIG }, acme), 'priority'],
    ['enqueue with timeoutSecs -1', () => client.enqueue({ kind: 'k', timeoutSecs: -1 }, acme), 'timeout_secs'],
    ['enqueue with delayMs NaN', () => client.enqueue({ kind: 'k', delayMs: NaN }, acme), 'delay_ms'],
    [
      'enqueue with notBefore Infinity',
      () => client.enqueue({ kind: 'k', notBefore: Infinity }, acme),
      'not_before_us',
    ],
    [
      'a batch whose second job has maxAttempts 1.5',
      () => client.enqueueBatch([{ kind: 'k' }, { kind: 'k', maxAttempts: 1.5 }], acme),
      'jobs[1].max_attempts',
    ],
    ['lease with limit -1', () => client.lease({ workerId: 'w1', limit: -1 }), 'limit'],
    ['lease with waitMs -1', () => client.lease({ workerId: 'w1', waitMs: -1 }), 'wait_ms'],
    ['list with limit -1', () => client.list({ limit: -1 }), 'limit'],
    ['listSchedules with limit 2^32', () => client.listSchedules({ limit: TOO_BIG }), 'limit'],
    [
      'createSchedule with everySecs -3',
      () => client.createSchedule({ name: 's', everySecs: -3, job: { kind: 'k' } }, acme),
      'every_secs',
    ],
    [
      "createSchedule whose job's maxAttempts is -1",
      () => client.createSchedule({ name: 's', everySecs: 60, job: { kind: 'k', maxAttempts: -1 } }, acme),
      'job.max_attempts',
    ],
    ['updateSchedule with everySecs -3', () => client.updateSchedule('s', { everySecs: -3 }, acme), 'every_secs'],
    ['setKindLimit with concurrency -1', () => client.setKindLimit('email', { concurrency: -1 }), 'concurrency'],
    [
      'setKindLimit with concurrency 99999999999',
      () => client.setKindLimit('email', { concurrency: 99_999_999_999 }),
      'concurrency',
    ],
    ['complete with lease generation -1', () => client.complete(JOB_ID, fence(-1)), 'fence.lease_generation'],
    [
      'complete with a successor whose maxAttempts is -1',
      () => client.complete(JOB_ID, fence(1), { successors: [{ kind: 'next', maxAttempts: -1 }] }),
      'successors[0].max_attempts',
    ],
    ['heartbeat with lease generation 1.5', () => client.heartbeat(JOB_ID, fence(1.5)), 'fence.lease_generation'],
  ];

  for (const [what, call, field] of cases) {
    it(`refuses ${what} as invalid_argument naming ${field}, sending nothing`, async () => {
      const served = await callsServed();
      await assert.rejects(call(), (error: unknown) => {
        assert.ok(error instanceof TelhaError, String(error));
        assert.equal(error.code, ErrorCode.InvalidArgument, error.message);
        assert.equal(error.field, field, error.message);
        return true;
      });
      assert.equal(await callsServed(), served);
    });
  }

  it('still sends the numbers the wire can carry', async () => {
    const { job } = await client.enqueue({ kind: 'k', priority: 0, maxAttempts: 3, delayMs: 1.5 }, acme);
    assert.equal(job.maxAttempts, 3);
  });
});
