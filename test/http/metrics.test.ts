/**
 * /metrics, read as Prometheus reads it: the text format parsed by a parser,
 * each value checked against what the test did through the engine and gRPC.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TelhaClient } from '../../src/client/index.ts';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { tenantScope } from '../../src/core/types.ts';
import { parseMetrics } from '../support/http.ts';
import { serversClosedAfterEach, type TestServer } from '../support/server.ts';

const OPERATOR = 'operator-token-0123456789';
const acme = tenantScope('acme');
const globex = tenantScope('globex');

async function scrape(server: TestServer, token: string | null = OPERATOR): Promise<ReturnType<typeof parseMetrics>> {
  const reply = await fetch(`${server.http}/metrics`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  assert.equal(reply.status, 200);
  assert.match(reply.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseMetrics(await reply.text());
}

describe('/metrics', () => {
  const startServer = serversClosedAfterEach();

  it('needs an operator token when tokens are configured', async () => {
    const server = await startServer({
      server: {
        tokens: [
          { token: OPERATOR, role: 'operator' },
          { token: 'a-worker-token-0123456', role: 'worker' },
        ],
      },
    });
    assert.equal((await fetch(`${server.http}/metrics`)).status, 401);
    const worker = await fetch(`${server.http}/metrics`, {
      headers: { authorization: 'Bearer a-worker-token-0123456' },
    });
    assert.equal(worker.status, 403);
    await scrape(server);
  });

  it('counts every transition by kind, refusals by reason, and times waits and runs', async () => {
    const server = await startServer({ metrics: { refresh_ms: 50 } });
    const q = server.queue;
    await q.enqueueBatch([{ kind: 'mail' }, { kind: 'mail' }, { kind: 'mail' }, { kind: 'sms' }], acme);
    const leased = await q.lease({ workerId: 'w1', scope: acme, kinds: ['mail'], limit: 3 });
    assert.equal(leased.length, 3);
    const [a, b, c] = leased as [(typeof leased)[0], (typeof leased)[0], (typeof leased)[0]];
    const fence = (job: typeof a) => ({ workerId: 'w1', leaseGeneration: job.leaseGeneration });
    await q.complete(a.jobId, fence(a));
    await q.fail(b.jobId, fence(b), { error: 'no', permanent: true });
    await q.retry(b.jobId);
    await q.fail(c.jobId, fence(c), { error: 'again' });
    // Two stale submissions: another worker, then an old generation.
    await assert.rejects(q.complete(a.jobId, { workerId: 'w2', leaseGeneration: 1 }));
    const again = await q.leaseNext({ workerId: 'w1', scope: acme, kinds: ['mail'] });
    assert.ok(again);
    await assert.rejects(q.heartbeat(again.jobId, { workerId: 'w1', leaseGeneration: again.leaseGeneration - 1 }));

    const m = await scrape(server, null);
    assert.equal(m.value('telha_jobs_enqueued_total', { kind: 'mail' }), 3);
    assert.equal(m.value('telha_jobs_enqueued_total', { kind: 'sms' }), 1);
    assert.equal(m.value('telha_jobs_leased_total', { kind: 'mail' }), 4);
    assert.equal(m.value('telha_jobs_completed_total', { kind: 'mail' }), 1);
    assert.equal(m.value('telha_jobs_failed_total', { kind: 'mail' }), 2);
    assert.equal(m.value('telha_jobs_dead_total', { kind: 'mail' }), 1);
    assert.equal(m.value('telha_jobs_retried_total', { kind: 'mail' }), 1);
    assert.equal(m.value('telha_jobs_reaped_total', { kind: 'mail' }), 0);
    assert.equal(m.value('telha_fenced_refused_total', { reason: 'worker_mismatch' }), 1);
    assert.equal(m.value('telha_fenced_refused_total', { reason: 'generation_superseded' }), 1);
    assert.equal(m.histogramCount('telha_job_wait_seconds', { kind: 'mail' }), 4);
    assert.equal(m.histogramCount('telha_job_run_seconds', { kind: 'mail', outcome: 'completed' }), 1);
    assert.equal(m.histogramCount('telha_job_run_seconds', { kind: 'mail', outcome: 'failed' }), 2);
    // Gauges from the counts: sms Pending, one mail Leased, one Completed, one mail Pending behind its backoff gate.
    assert.equal(m.value('telha_jobs', { state: 'pending', kind: 'sms' }), 1);
    assert.equal(m.value('telha_jobs', { state: 'leased', kind: 'mail' }), 1);
    assert.equal(m.value('telha_jobs', { state: 'completed', kind: 'mail' }), 1);
    assert.equal(m.value('telha_jobs', { state: 'pending', kind: 'mail' }), 1);
    assert.ok(m.value('telha_oldest_pending_age_seconds') >= 0);
    assert.ok(m.value('telha_store_size_bytes') >= 0);
    assert.equal(m.value('telha_store_write_stopped'), 0);
    assert.ok(m.families.has('process_cpu_seconds_total'), 'process metrics');
  });

  it('counts cancels by kind, the refusals of a cancelled holder, and cancelled jobs by state', async () => {
    const server = await startServer({ metrics: { refresh_ms: 50 } });
    const q = server.queue;
    const [pending, held] = await q.enqueueBatch([{ kind: 'mail' }, { kind: 'mail' }], acme);
    const leased = await q.leaseNext({ workerId: 'w1', scope: acme, kinds: ['mail'] });
    assert.ok(leased !== null && leased.jobId === pending?.job.jobId);
    await q.cancel(leased.jobId);
    await q.cancel(held!.job.jobId);
    await assert.rejects(q.complete(leased.jobId, { workerId: 'w1', leaseGeneration: leased.leaseGeneration }));
    const m = await scrape(server, null);
    assert.equal(m.value('telha_jobs_cancelled_total', { kind: 'mail' }), 2);
    assert.equal(m.value('telha_fenced_refused_total', { reason: 'cancelled' }), 1);
    assert.equal(m.value('telha_jobs', { state: 'cancelled', kind: 'mail' }), 2);
  });

  it('exports each kind limit: its lane’s leased jobs, its concurrency and its tokens', async () => {
    const server = await startServer();
    await server.queue.setKindLimit({ kindPrefix: 'mail', concurrency: 4, rate: '10/1h' });
    await server.queue.setKindLimit({ kindPrefix: 'sms', concurrency: 2 });
    await server.queue.enqueueBatch([{ kind: 'mail' }, { kind: 'mail.bulk' }, { kind: 'sms' }], acme);
    assert.equal((await server.queue.lease({ workerId: 'w', limit: 10 })).length, 3);
    const m = await scrape(server, null);
    assert.equal(m.value('telha_kind_limit_leased', { kind_prefix: 'mail' }), 2);
    assert.equal(m.value('telha_kind_limit_leased', { kind_prefix: 'sms' }), 1);
    assert.equal(m.value('telha_kind_limit_concurrency', { kind_prefix: 'mail' }), 4);
    assert.equal(m.value('telha_kind_limit_tokens', { kind_prefix: 'mail' }), 8);
    assert.ok(
      !(m.families.get('telha_kind_limit_tokens')?.metrics ?? []).some((s) => s.labels?.['kind_prefix'] === 'sms'),
    );
  });

  it('exports each tenant limit with metrics.tenant_labels, and only their number without', async () => {
    for (const tenantLabels of [true, false]) {
      const server = await startServer({ metrics: { tenant_labels: tenantLabels } });
      await server.queue.setTenantLimit({ tenant: 'acme', concurrency: 3, rate: '10/1h', weight: 4 });
      await server.queue.setTenantLimit({ tenant: 'globex', weight: 2 });
      await server.queue.enqueueBatch([{ kind: 'k' }, { kind: 'k' }], acme);
      assert.equal((await server.queue.lease({ workerId: 'w', limit: 10 })).length, 2);
      const m = await scrape(server, null);
      assert.equal(m.value('telha_tenant_limits'), 2);
      if (!tenantLabels) {
        assert.equal(m.families.get('telha_tenant_limit_leased'), undefined, 'no tenant label without the option');
        continue;
      }
      assert.equal(m.value('telha_tenant_limit_leased', { tenant: 'acme' }), 2);
      assert.equal(m.value('telha_tenant_limit_concurrency', { tenant: 'acme' }), 3);
      assert.equal(m.value('telha_tenant_limit_tokens', { tenant: 'acme' }), 8);
      assert.equal(m.value('telha_tenant_limit_weight', { tenant: 'acme' }), 4);
      assert.equal(m.value('telha_tenant_limit_weight', { tenant: 'globex' }), 2);
      assert.equal(m.value('telha_tenant_limit_leased', { tenant: 'globex' }), 0);
    }
  });

  it('counts reaped leases', async () => {
    const server = await startServer({ jobs: { lease_ttl_secs: 1 } });
    await server.queue.enqueue({ kind: 'slow' }, acme);
    await server.queue.leaseNext({ workerId: 'w', scope: acme });
    server.clock.advance(2_000_000);
    await server.queue.maintenance.reapExpired();
    const m = await scrape(server, null);
    assert.equal(m.value('telha_jobs_reaped_total', { kind: 'slow' }), 1);
  });

  it('counts gRPC calls by method and status code, and open Work streams', async () => {
    const server = await startServer({ server: { tokens: [{ token: OPERATOR, role: 'operator' }] } });
    const client = new TelhaClient({ address: server.address, token: OPERATOR });
    const stranger = new TelhaClient({ address: server.address, token: 'not-a-known-token-000000' });
    try {
      await client.enqueue({ kind: 'k' }, acme);
      await client.counts();
      await client.counts();
      await assert.rejects(
        stranger.counts(),
        (e: unknown) => e instanceof TelhaError && e.code === ErrorCode.Unauthenticated,
      );
      await assert.rejects(
        client.show('01a22e3b-0b60-742e-89f2-4f33c46edd8e'),
        (e: unknown) => e instanceof TelhaError,
      );
      const m = await scrape(server);
      assert.equal(m.value('telha_grpc_calls_total', { method: 'counts', code: 'OK' }), 2);
      assert.equal(m.value('telha_grpc_calls_total', { method: 'counts', code: 'UNAUTHENTICATED' }), 1);
      assert.equal(m.value('telha_grpc_calls_total', { method: 'show', code: 'NOT_FOUND' }), 1);
      assert.ok(m.value('telha_grpc_calls_total', { code: 'OK' }) >= 1);
      assert.equal(m.value('telha_work_streams_open'), 0);
      assert.equal(m.value('telha_lease_waits_parked'), 0);
      assert.equal(m.value('telha_pauses'), 0);
      await client.pause('k', acme);
      assert.equal((await scrape(server)).value('telha_pauses'), 1);
    } finally {
      client.close();
      stranger.close();
    }
  });

  it('caps kind labels with an other bucket, and labels tenants only when asked', async () => {
    let server = await startServer({ metrics: { max_kinds: 2, refresh_ms: 50 } });
    await server.queue.enqueueBatch([{ kind: 'k1' }, { kind: 'k2' }, { kind: 'k3' }, { kind: 'k4' }], acme);
    let m = await scrape(server, null);
    assert.equal(m.value('telha_jobs_enqueued_total', { kind: 'k1' }), 1);
    assert.equal(m.value('telha_jobs_enqueued_total', { kind: 'k2' }), 1);
    assert.equal(m.value('telha_jobs_enqueued_total', { kind: 'other' }), 2);
    assert.equal(m.value('telha_jobs', { state: 'pending', kind: 'other' }), 2);
    const kinds = new Set(m.families.get('telha_jobs_enqueued_total')?.metrics.map((x) => x.labels?.['kind']));
    assert.deepEqual([...kinds].sort(), ['k1', 'k2', 'other']);
    assert.ok(!(m.families.get('telha_jobs_enqueued_total')?.metrics ?? []).some((x) => x.labels?.['tenant']));
    await server.close();

    server = await startServer({ metrics: { tenant_labels: true } });
    await server.queue.enqueue({ kind: 'k' }, acme);
    await server.queue.enqueue({ kind: 'k' }, globex);
    await server.queue.enqueue({ kind: 'k' }, globex);
    m = await scrape(server, null);
    assert.equal(m.value('telha_jobs_enqueued_total', { kind: 'k', tenant: 'acme' }), 1);
    assert.equal(m.value('telha_jobs_enqueued_total', { kind: 'k', tenant: 'globex' }), 2);
  });

  it('is not served, and the engine not observed for it, with metrics.enabled = false', async () => {
    const server = await startServer({ metrics: { enabled: false } });
    assert.equal((await fetch(`${server.http}/metrics`)).status, 404);
  });
});
