/**
 * The SDK's `enqueue` calls of one event-loop turn travel as one `EnqueueEach`
 * call per scope, yet each is answered exactly as its own `Enqueue` would be:
 * a bad job fails only itself, idempotency keys and scopes hold, and a tenant
 * still cannot write outside its scope.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { JobState, SYSTEM_SCOPE, tenantScope } from '../../src/core/types.ts';
import { serversClosedAfterEach } from '../support/server.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');

function failure(result: PromiseSettledResult<unknown> | undefined): TelhaError {
  assert.equal(result?.status, 'rejected');
  const error = result.reason as unknown;
  assert.ok(error instanceof TelhaError, `expected a TelhaError, got ${String(error)}`);
  return error;
}

describe('enqueue calls made together', () => {
  const startServer = serversClosedAfterEach();

  it('go to the server as one call: 50 at once fit under max_concurrent_calls = 1', async () => {
    const server = await startServer({ server: { max_concurrent_calls: 1 } });
    const client = new TelhaClient({ address: server.address });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => client.enqueue({ kind: 'burst', payload: `n=${i}` }, acme)),
    );
    assert.equal(new Set(results.map((r) => r.job.jobId)).size, 50);
    assert.deepEqual(
      results.map((r) => Buffer.from(r.job.payload).toString()),
      Array.from({ length: 50 }, (_, i) => `n=${i}`),
    );
    assert.deepEqual(await client.counts(acme), [{ state: JobState.Pending, kind: 'burst', count: 50 }]);
    client.close();
  });

  it('split a turn of more than 1,000 calls into several calls, answering every one', async () => {
    const server = await startServer();
    const client = new TelhaClient({ address: server.address });
    const results = await Promise.all(
      Array.from({ length: 2_500 }, (_, i) => client.enqueue({ kind: 'many', idempotencyKey: `k-${i % 2_400}` }, acme)),
    );
    assert.equal(results.filter((r) => r.created).length, 2_400);
    // Keys repeated across the split (k-0 .. k-99 come twice) still name the first job.
    for (let i = 2_400; i < 2_500; i++) {
      assert.equal(results[i]?.created, false);
      assert.equal(results[i]?.job.jobId, results[i - 2_400]?.job.jobId);
    }
    assert.deepEqual(await client.counts(acme), [{ state: JobState.Pending, kind: 'many', count: 2_400 }]);
    client.close();
  });

  it('answer each job on its own: a bad one fails alone, keys and scopes hold', async () => {
    const server = await startServer();
    const client = new TelhaClient({ address: server.address });
    const calls = [
      client.enqueue({ kind: 'ok', payload: 'a' }, acme),
      client.enqueue({ kind: 'bad', priority: 999 }, acme),
      client.enqueue({ kind: 'keyed', idempotencyKey: 'k-1' }, acme),
      client.enqueue({ kind: 'keyed', idempotencyKey: 'k-1' }, acme),
      client.enqueue({ kind: '' }, acme),
      client.enqueue({ kind: 'elsewhere' }, globex),
      client.enqueue({ kind: 'system:tick' }, SYSTEM_SCOPE),
      client.enqueue({ kind: 'ok', payload: 'b' }, acme),
    ];
    const settled = await Promise.allSettled(calls);
    const ok = (i: number) => {
      const result = settled[i];
      assert.equal(result?.status, 'fulfilled', `call ${i}`);
      return result.value;
    };
    assert.equal(failure(settled[1]).code, ErrorCode.InvalidArgument);
    assert.equal(failure(settled[1]).field, 'priority');
    assert.equal(failure(settled[4]).field, 'kind');
    assert.equal(ok(2).created, true);
    assert.equal(ok(3).created, false);
    assert.equal(ok(3).job.jobId, ok(2).job.jobId);
    assert.equal(ok(5).job.tenant, 'globex');
    assert.equal(ok(6).job.tenant, null);
    for (const i of [0, 7]) assert.equal(ok(i).job.tenant, 'acme');
    const stored = await client.list({ scope: acme, limit: 100 });
    assert.deepEqual(stored.jobs.map((j) => j.kind).sort(), ['keyed', 'ok', 'ok']);
    client.close();
  });

  it("still keep a tenant out of other scopes, failing every call of that scope's group", async () => {
    const server = await startServer({
      server: {
        tokens: [{ name: 'acme', token: 'acme-token-0123456789', role: 'tenant', tenant: 'acme' }],
      },
    });
    const client = new TelhaClient({ address: server.address, token: 'acme-token-0123456789' });
    const settled = await Promise.allSettled([
      client.enqueue({ kind: 'x' }, globex),
      client.enqueue({ kind: 'y' }, globex),
      client.enqueue({ kind: 'mine' }, acme),
    ]);
    assert.equal(failure(settled[0]).code, ErrorCode.PermissionDenied);
    assert.equal(failure(settled[1]).code, ErrorCode.PermissionDenied);
    assert.equal(settled[2]?.status, 'fulfilled');
    assert.deepEqual(await client.counts(), [{ state: JobState.Pending, kind: 'mine', count: 1 }]);
    client.close();
  });
});
