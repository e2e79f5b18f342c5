/**
 * Parked calls and unary calls have separate budgets: a crowd of idle workers (long-poll
 * Leases and Work streams filling `server.max_parked_calls`) never stops a producer's
 * Enqueue or an operator's Counts, which count against `server.max_concurrent_calls`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/client.ts';
import { ErrorCode, isTelhaError } from '../../src/core/errors.ts';
import { tenantScope } from '../../src/core/types.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { openWork, type OpenedWork } from '../support/work-stream.ts';

const acme = tenantScope('acme');
const PARKED = 2;

/** Until the server has parked `n` lease waits (a Work stream with credit parks one too). */
async function parked(server: TestServer, n: number): Promise<void> {
  while (server.queue.waits.parked < n) await new Promise((resolve) => setImmediate(resolve));
}

function exhausted(budget: string): (error: unknown) => boolean {
  return (error) => isTelhaError(error, ErrorCode.ResourceExhausted) && error.message.includes(budget);
}

describe('call budgets', () => {
  let server: TestServer;
  let client: TelhaClient;
  let stream: OpenedWork;
  const idle = new AbortController();
  let longPoll: Promise<unknown>;

  before(async () => {
    // As many unary calls as parked ones: before the budgets were split, the parked calls used them all.
    server = await startTestServer({ server: { max_concurrent_calls: PARKED, max_parked_calls: PARKED } });
    client = new TelhaClient({ address: server.address });
    // The parked budget full: one idle Work stream and one idle long-poll Lease.
    stream = openWork(client, { workerId: 'idle-stream', kinds: ['nothing'] });
    stream.channel.grant(1);
    await stream.opened;
    await parked(server, 1);
    longPoll = client.lease({ workerId: 'idle-poll', kinds: ['nothing'], waitMs: 25_000, signal: idle.signal });
    await parked(server, PARKED);
  });
  after(async () => {
    idle.abort();
    await longPoll.catch(() => {});
    stream.channel.cancel();
    await stream.ended;
    client.close();
    await server.close();
  });

  it("serves an operator's Counts and a producer's Enqueue while idle workers fill the parked budget", async () => {
    const { job, created } = await client.enqueue({ kind: 'report' }, acme);
    assert.ok(created);
    const counts = await client.counts(acme);
    assert.deepEqual(
      counts.map((c) => [c.kind, c.count]),
      [['report', 1]],
    );
    assert.equal((await client.show(job.jobId)).jobId, job.jobId);
  });

  it('serves a Lease that does not wait as a unary call', async () => {
    assert.deepEqual(await client.lease({ workerId: 'w', kinds: ['nothing'] }), []);
  });

  it('refuses one more long-poll Lease, naming server.max_parked_calls', async () => {
    await assert.rejects(
      client.lease({ workerId: 'one-too-many', kinds: ['nothing'], waitMs: 25_000 }),
      exhausted('server.max_parked_calls'),
    );
  });

  it('refuses one more Work stream, naming server.max_parked_calls', async () => {
    const extra = openWork(client, { workerId: 'one-too-many', kinds: ['nothing'] });
    let accepted = false;
    void extra.opened.then(() => (accepted = true));
    extra.channel.grant(1);
    const error = await extra.ended;
    assert.ok(exhausted('server.max_parked_calls')(error), String(error));
    assert.equal(accepted, false, 'a refused stream is never told it was accepted');
  });
});
