/**
 * The dashboard's operator controls over real sockets: discard and run now on a job's page, with
 * the session's CSRF token and the gRPC calls' permissions and scopes; a confirmation on every
 * action that cannot be taken back; the Jobs list newest first, system jobs only when asked for.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobState, SYSTEM_SCOPE, tenantScope, type QueueScope } from '../../src/core/types.ts';
import { jobIn, type Harness } from '../../src/testing/conformance/harness.ts';
import { dashboardServer } from '../support/http.ts';
import { TOKENS } from '../support/refuses.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');

describe('the dashboard operator controls', () => {
  const { server, signedIn } = dashboardServer();
  let fixtures = 0;
  const fixture = (state: 'pending' | 'leased' | 'completed' | 'dead' | 'cancelled', scope: QueueScope = acme) =>
    jobIn({ queue: server.queue } as Harness, scope, state, {
      kind: `${scope.type === 'system' ? 'system:' : ''}controls.${++fixtures}`,
    });

  it('discards a Dead job with the CSRF token, asking first, and keeps its record', async () => {
    const dead = await fixture('dead');
    const browser = await signedIn(TOKENS.operator);
    const page = await browser.get(`/jobs/${dead.jobId}`);
    assert.match(page.text, /action="\/jobs\/[^"]+\/discard"\s+class="inline"\s+data-confirm="Discard this dead job\?/);
    assert.equal((await browser.post(`/jobs/${dead.jobId}/discard`, {})).status, 403);
    assert.equal((await server.queue.show(dead.jobId)).state, JobState.Dead, 'nothing without the token');
    const reply = await browser.post(`/jobs/${dead.jobId}/discard`, { _csrf: await browser.csrf() });
    assert.equal(reply.status, 303);
    assert.equal(reply.headers.get('location'), `/jobs/${dead.jobId}?discarded=1`);
    const after = await server.queue.show(dead.jobId);
    assert.equal(after.state, JobState.Cancelled);
    assert.equal(after.events.at(-1)?.transition, 'discarded');
    assert.equal(after.events.at(-1)?.detail, 'by=ops');
    const shown = await browser.get(`/jobs/${dead.jobId}?discarded=1`);
    assert.ok(shown.text.includes('Discarded: the job is Cancelled'));
    assert.ok(!shown.text.includes('id="discard"'), 'no discard for a job that is not Dead');
  });

  it('runs a delayed job now, offering the button only while a gate holds it', async () => {
    const { job } = await server.queue.enqueue({ kind: 'later', delayMs: 3_600_000 }, acme);
    const browser = await signedIn(TOKENS.acme);
    const page = await browser.get(`/jobs/${job.jobId}`);
    assert.match(page.text, /action="\/jobs\/[^"]+\/run-now"\s+class="inline"\s+data-confirm="Run this job now/);
    const reply = await browser.post(`/jobs/${job.jobId}/run-now`, { _csrf: await browser.csrf() });
    assert.equal(reply.status, 303);
    const after = await server.queue.show(job.jobId);
    assert.equal(after.notBefore, null);
    assert.equal(after.events.at(-1)?.detail, `not_before=${job.notBefore} by=tenant:acme`);
    const shown = await browser.get(`/jobs/${job.jobId}?run_now=1`);
    assert.ok(shown.text.includes('Ready now') && !shown.text.includes('id="run-now"'));
    assert.equal((await browser.post(`/jobs/${job.jobId}/run-now`, { _csrf: await browser.csrf() })).status, 409);
  });

  it("refuses a tenant's discard or run now of another tenant's job as not found, changing nothing", async () => {
    const dead = await fixture('dead', globex);
    const { job: later } = await server.queue.enqueue({ kind: 'later', delayMs: 3_600_000 }, globex);
    const browser = await signedIn(TOKENS.acme);
    const csrf = await browser.csrf();
    assert.equal((await browser.post(`/jobs/${dead.jobId}/discard`, { _csrf: csrf })).status, 404);
    assert.equal((await browser.post(`/jobs/${later.jobId}/run-now`, { _csrf: csrf })).status, 404);
    assert.equal((await server.queue.show(dead.jobId)).state, JobState.Dead);
    assert.equal((await server.queue.show(later.jobId)).notBefore, later.notBefore);
    const system = await fixture('dead', SYSTEM_SCOPE);
    assert.equal((await browser.post(`/jobs/${system.jobId}/discard`, { _csrf: csrf })).status, 404);
    assert.equal((await server.queue.show(system.jobId)).state, JobState.Dead);
  });

  it('asks before a retry or a cancel too', async () => {
    const browser = await signedIn(TOKENS.operator);
    const dead = await fixture('dead');
    assert.match(
      (await browser.get(`/jobs/${dead.jobId}`)).text,
      /\/retry"\s+class="inline"\s+data-confirm="Retry this job\?/,
    );
    const pending = await fixture('pending');
    assert.match(
      (await browser.get(`/jobs/${pending.jobId}`)).text,
      /\/cancel"\s+class="inline"\s+data-confirm="Cancel this job\?/,
    );
  });

  it('lists jobs newest first, oldest first on request, and system jobs only with system=1', async () => {
    const first = (await server.queue.enqueue({ kind: 'ordered.a' }, globex)).job.jobId;
    const second = (await server.queue.enqueue({ kind: 'ordered.b' }, acme)).job.jobId;
    const system = (await server.queue.enqueue({ kind: 'system:ordered' }, SYSTEM_SCOPE)).job.jobId;
    const browser = await signedIn(TOKENS.operator);
    const order = async (query: string): Promise<string[]> => {
      const page = await browser.get(`/jobs?state=pending&limit=500${query}`);
      assert.equal(page.status, 200, page.text);
      return [first, second, system]
        .filter((id) => page.text.includes(id))
        .sort((a, b) => page.text.indexOf(a) - page.text.indexOf(b));
    };
    assert.deepEqual(await order(''), [second, first]);
    assert.deepEqual(await order('&order=oldest'), [first, second]);
    assert.deepEqual(await order('&system=1'), [system, second, first]);
    assert.equal((await browser.get('/jobs?order=sideways')).status, 400);
  });
});
