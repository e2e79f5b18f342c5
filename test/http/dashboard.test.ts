/**
 * The HTTP listener over real sockets: probes, sessions, every page and
 * action, and who may see and do what. A tenant never sees or acts on
 * another tenant's jobs; a request without the session or its CSRF token
 * changes nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { openQueue } from '../../src/open.ts';
import { startServer } from '../../src/serve/server.ts';
import { jobIn, type Harness } from '../../src/testing/conformance/harness.ts';
import { tempDir } from '../support/backends.ts';
import { Browser, dashboardServer } from '../support/http.ts';
import { startTestServer } from '../support/server.ts';
import { TOKENS } from '../support/refuses.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');

describe('the HTTP listener with tokens', () => {
  const { server, signedIn } = dashboardServer({ metrics: { refresh_ms: 100 } });
  const fixture = (state: 'pending' | 'leased' | 'completed' | 'dead' | 'cancelled', scope = acme, kind?: string) =>
    jobIn({ queue: server.queue } as Harness, scope, state, kind === undefined ? undefined : { kind });

  const operator = (): Promise<Browser> => signedIn(TOKENS.operator);

  it('answers /healthz and /readyz without a token', async () => {
    const health = await fetch(`${server.http}/healthz`);
    assert.equal(health.status, 200);
    assert.equal(await health.text(), 'ok\n');
    const ready = await fetch(`${server.http}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(await ready.text(), 'ready\n');
  });

  it('sends the browser to the login page without a session, and refuses the stream and actions', async () => {
    const dead = await fixture('dead');
    const anonymous = new Browser(server.http);
    const home = await anonymous.get('/');
    assert.equal(home.status, 303);
    assert.equal(home.headers.get('location'), '/login');
    assert.equal((await anonymous.get('/jobs')).status, 303);
    assert.equal((await anonymous.get('/events', { accept: 'text/event-stream' })).status, 401);
    const retry = await anonymous.post(`/jobs/${dead.jobId}/retry`, { _csrf: 'anything' });
    assert.equal(retry.status, 401);
    assert.equal((await server.queue.show(dead.jobId)).state, JobState.Dead);
    const login = await anonymous.get('/login');
    assert.equal(login.status, 200);
    assert.match(login.text, /type="password" name="token"/);
  });

  it('logs in with a token into an HttpOnly, SameSite=Strict cookie that does not carry the token', async () => {
    const browser = new Browser(server.http);
    const reply = await browser.login(TOKENS.operator);
    assert.equal(reply.status, 303);
    const cookie = reply.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^telha_session=[A-Za-z0-9_-]{43};/);
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    assert.ok(!cookie.includes(TOKENS.operator));
    assert.equal((await browser.get('/')).status, 200);
  });

  it('refuses unknown tokens and worker tokens at the login, and gives them no session', async () => {
    for (const [token, status, says] of [
      ['not-a-token-at-all-0000000', 401, 'Unknown token.'],
      [TOKENS.worker, 403, 'A worker token may not use the dashboard.'],
    ] as const) {
      const browser = new Browser(server.http);
      const reply = await browser.login(token);
      assert.equal(reply.status, status);
      assert.ok(reply.text.includes(says));
      assert.equal(reply.headers.get('set-cookie'), null);
      assert.equal((await browser.get('/')).status, 303);
    }
  });

  it('logs out: the session is gone on the server, not only in the browser', async () => {
    const browser = await operator();
    const csrf = await browser.csrf();
    const cookie = browser.cookie;
    assert.equal((await browser.post('/logout', { _csrf: csrf })).status, 303);
    browser.cookie = cookie; // a copy of the old cookie no longer works
    assert.equal((await browser.get('/')).status, 303);
  });

  it('shows an operator the counts by state, kind and tenant', async () => {
    await fixture('pending', acme, 'count.a');
    await fixture('pending', globex, 'count.b');
    const page = await (await operator()).get('/');
    assert.equal(page.status, 200);
    assert.match(page.text, /data-count="pending">\d+</);
    assert.ok(page.text.includes('count.a') && page.text.includes('count.b'));
    assert.match(page.text, /By tenant/);
    assert.ok(page.text.includes('href="/jobs?tenant=globex"'));
  });

  it('lists jobs filtered by state, kind prefix, tenant and creation time, page by page', async () => {
    const created: JobRecord[] = [];
    for (let i = 0; i < 5; i++) created.push(await fixture('pending', acme, 'list.paged'));
    await fixture('pending', globex, 'list.paged');
    const browser = await operator();
    const ids = (text: string) => [...text.matchAll(/href="\/jobs\/([0-9a-f-]{36})"/g)].map((m) => m[1]);
    const first = await browser.get('/jobs?state=pending&kind=list.&tenant=acme&limit=2');
    assert.equal(first.status, 200);
    // Newest first.
    const newest = created.toReversed();
    assert.deepEqual(
      ids(first.text),
      newest.slice(0, 2).map((j) => j.jobId),
    );
    const next = /href="(\/jobs\?[^"]*page_token=[^"]*)"/.exec(first.text)?.[1]?.replace(/&amp;/g, '&');
    assert.ok(next);
    assert.deepEqual(
      ids((await browser.get(next)).text),
      newest.slice(2, 4).map((j) => j.jobId),
    );
    const all = await browser.get('/jobs?kind=list.paged');
    assert.equal(ids(all.text).length, 6);
    const middle = created[2] as JobRecord;
    const timed = await browser.get(
      `/jobs?kind=list.&created_after=${middle.createdAt}&created_before=${(created[4] as JobRecord).createdAt}&tenant=acme`,
    );
    assert.deepEqual(ids(timed.text), [(created[3] as JobRecord).jobId, middle.jobId]);
  });

  it('shows one job with its record, payload and audit trail', async () => {
    const { job } = await server.queue.enqueue(
      { kind: 'shown', payload: '{"to":"a@b.c"}', idempotencyKey: 'order-17' },
      acme,
    );
    const leased = await server.queue.leaseNext({ workerId: 'worker-7', kinds: ['shown'] });
    assert.ok(leased);
    const fence = { workerId: 'worker-7', leaseGeneration: leased.leaseGeneration };
    await server.queue.heartbeat(job.jobId, fence);
    await server.queue.heartbeat(job.jobId, fence);
    await server.queue.fail(job.jobId, fence, { error: 'SMTP timeout' });
    const page = await (await operator()).get(`/jobs/${job.jobId}`);
    assert.equal(page.status, 200);
    for (const text of ['Enqueued', 'Leased', 'worker-7', 'generation <b>1</b>', 'Heartbeats ×2', 'SMTP timeout']) {
      assert.ok(page.text.includes(text), `job page lacks ${text}`);
    }
    assert.ok(page.text.includes('&quot;to&quot;: &quot;a@b.c&quot;'), 'payload pretty-printed as text');
    assert.ok(page.text.includes('order-17'));
    assert.equal(page.text.includes('Trace id'), false, 'an untraced job shows no trace id');
  });

  it('shows the trace id of a job enqueued with a trace context on its page', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const { job } = await server.queue.enqueue(
      { kind: 'traced', traceContext: { traceparent, tracestate: null } },
      acme,
    );
    const page = await (await operator()).get(`/jobs/${job.jobId}`);
    assert.equal(page.status, 200);
    assert.ok(page.text.includes('Trace id'), 'job page lacks its trace id');
    assert.ok(page.text.includes('4bf92f3577b34da6a3ce929d0e0e4736'));
  });

  it("links a superseded job's page to the job that replaced it", async () => {
    const { job: old } = await server.queue.enqueue({ kind: 'sync', supersedeKey: 'doc-1' }, acme);
    const { job: latest } = await server.queue.enqueue({ kind: 'sync', supersedeKey: 'doc-1' }, acme);
    const page = await (await operator()).get(`/jobs/${old.jobId}`);
    assert.equal(page.status, 200);
    assert.ok(page.text.includes('Superseded by'), 'job page lacks its successor');
    assert.ok(page.text.includes(`href="/jobs/${latest.jobId}"`), 'the successor is a link to its page');
    assert.ok(page.text.includes('doc-1'));
  });

  it('streams a job page its transitions from where the page was read, and resumes from the last one seen', async () => {
    const { job } = await server.queue.enqueue({ kind: 'followed' }, acme);
    const browser = await operator();
    const page = await browser.get(`/jobs/${job.jobId}`);
    const events = /data-events="([^"]+)"/.exec(page.text)?.[1]?.replaceAll('&amp;', '&');
    assert.ok(
      events !== undefined && events.startsWith(`/jobs/${job.jobId}/events?from=`),
      'the page says where to follow it from',
    );
    // Transitions after the page was read, and another job's among them, which the stream leaves out.
    const leased = await server.queue.leaseNext({ workerId: 'worker-f', kinds: ['followed'] });
    assert.equal(leased?.jobId, job.jobId);
    const fence = { workerId: 'worker-f', leaseGeneration: leased.leaseGeneration };
    await server.queue.enqueue({ kind: 'not-followed' }, acme);
    await server.queue.heartbeat(job.jobId, fence, { progress: '{"step":1}' });
    const first = await serverSentEvents(server.http, events, browser.cookie ?? '', 2);
    assert.deepEqual(
      first.map((e) => [e.event, e.data['transition'], e.data['state']]),
      [
        ['transition', 'leased', 'leased'],
        ['transition', 'progress', 'leased'],
      ],
    );
    await server.queue.complete(job.jobId, fence);
    // What a browser does when its stream drops: reconnect, sending the id of the last event it had.
    const resumed = await serverSentEvents(server.http, events, browser.cookie ?? '', 1, {
      'last-event-id': first[0]?.id ?? '',
    });
    assert.deepEqual(
      resumed.map((e) => e.data['transition']),
      ['progress'],
      'resumes after the last event seen, none repeated',
    );
    const all = await serverSentEvents(server.http, events, browser.cookie ?? '', 3);
    assert.deepEqual(
      all.map((e) => e.data['transition']),
      ['leased', 'progress', 'completed'],
    );
    assert.equal((await browser.get(`/jobs/${job.jobId}/events?from=r1.nonsense`)).status, 400);
    assert.equal((await browser.get(`/jobs/${job.jobId}/events?since=1`)).status, 400);
  });

  it("shows a leased job's timeout and when its attempt times out", async () => {
    const { job } = await server.queue.enqueue({ kind: 'timed', timeoutSecs: 90 }, acme);
    const leased = await server.queue.leaseNext({ workerId: 'worker-8', kinds: ['timed'] });
    assert.equal(leased?.jobId, job.jobId);
    const page = await (await operator()).get(`/jobs/${job.jobId}`);
    for (const text of ['Attempt times out', 'Timeout per attempt', '90 s']) {
      assert.ok(page.text.includes(text), `job page lacks ${text}`);
    }
  });

  it('shows a job’s result and last progress, escaped, JSON pretty-printed', async () => {
    const { job } = await server.queue.enqueue({ kind: 'results.shown' }, acme);
    const leased = await server.queue.leaseNext({ workerId: 'worker-8', kinds: ['results.shown'] });
    assert.ok(leased);
    const fence = { workerId: 'worker-8', leaseGeneration: leased.leaseGeneration };
    await server.queue.heartbeat(job.jobId, fence, { progress: '{"step":"<b>upload</b>"}' });
    await server.queue.heartbeat(job.jobId, fence, { progress: '{"step":"<b>upload</b>"}' });
    await server.queue.complete(job.jobId, fence, { result: Buffer.from('{"html":"<script>x</script>"}') });
    const page = await (await operator()).get(`/jobs/${job.jobId}`);
    assert.equal(page.status, 200);
    assert.ok(page.text.includes('Progress reports ×2'), 'folded progress events');
    assert.ok(
      page.text.includes('&quot;step&quot;: &quot;&lt;b&gt;upload&lt;/b&gt;&quot;'),
      'progress escaped, pretty',
    );
    assert.ok(
      page.text.includes('&quot;html&quot;: &quot;&lt;script&gt;x&lt;/script&gt;&quot;'),
      'result escaped, pretty',
    );
    assert.ok(!page.text.includes('<script>x'), 'nothing unescaped');
  });

  it('shows a payload that is not text as hex, and a huge one cut with its size', async () => {
    const binary = await server.queue.enqueue({ kind: 'bin', payload: new Uint8Array([0, 1, 2, 255]) }, acme);
    const huge = await server.queue.enqueue({ kind: 'huge', payload: 'x'.repeat(200_000) }, acme);
    const browser = await operator();
    const bin = await browser.get(`/jobs/${binary.job.jobId}`);
    assert.ok(bin.text.includes('00 01 02 ff'));
    const big = await browser.get(`/jobs/${huge.job.jobId}`);
    assert.ok(big.text.includes('Truncated: showing the first 16,384 of 200,000 bytes'));
    assert.ok(big.text.length < 100_000, `page of ${big.text.length} characters`);
  });

  it('shows leases by worker with their generation and deadline', async () => {
    const job = await fixture('leased', acme, 'leases.shown');
    const page = await (await operator()).get('/leases');
    assert.equal(page.status, 200);
    assert.ok(page.text.includes(job.jobId));
    assert.ok(page.text.includes('fixture-worker'));
    const mine = await (await operator()).get('/leases?worker=nobody-holds-this');
    assert.ok(!mine.text.includes(job.jobId));
  });

  it('counts every heartbeat of the current lease on the leases page, progress reports among them', async () => {
    const { job } = await server.queue.enqueue({ kind: 'leases.counted' }, acme);
    const leased = await server.queue.leaseNext({ workerId: 'worker-9', kinds: ['leases.counted'] });
    assert.ok(leased);
    const fence = { workerId: 'worker-9', leaseGeneration: leased.leaseGeneration };
    await server.queue.heartbeat(job.jobId, fence);
    await server.queue.heartbeat(job.jobId, fence, { progress: '0.5' });
    await server.queue.heartbeat(job.jobId, fence, { progress: '0.75' });
    await server.queue.heartbeat(job.jobId, fence);
    const page = await (await operator()).get('/leases?worker=worker-9');
    const row = page.text.slice(page.text.indexOf(job.jobId));
    assert.match(row, /<td class="num">1<\/td>\s*<td>[^]*?<\/td>\s*<td class="num">4<\/td>/);
  });

  it("lists schedules: an operator sees every scope's, a tenant its own", async () => {
    await server.queue.createSchedule(
      { name: 'acme-nightly', cron: '0 2 * * *', timezone: 'Europe/Berlin', job: { kind: 'cleanup' } },
      acme,
    );
    await server.queue.createSchedule({ name: 'globex-minutely', everySecs: 60, job: { kind: 'tick' } }, globex);
    const all = await (await operator()).get('/schedules');
    assert.equal(all.status, 200);
    assert.ok(all.text.includes('acme-nightly') && all.text.includes('globex-minutely'));
    assert.ok(all.text.includes('0 2 * * * (Europe/Berlin)'));
    const own = await (await signedIn(TOKENS.acme)).get('/schedules');
    assert.equal(own.status, 200);
    assert.ok(own.text.includes('acme-nightly'));
    assert.ok(!own.text.includes('globex-minutely'), "a tenant never sees another tenant's schedules");
  });

  it('says on the overview which kinds are paused: an operator every pause, a tenant its own', async () => {
    await server.queue.enqueue({ kind: 'email:send' }, acme);
    await server.queue.pause({ kindPrefix: 'email:', scope: acme, by: 'ops' });
    await server.queue.pause({ kindPrefix: 'zz-globex', scope: globex });
    const all = await (await operator()).get('/');
    assert.equal(all.status, 200);
    assert.match(all.text, /email:send<\/a>\s*<span class="badge paused"/);
    assert.ok(all.text.includes('tenant acme') && all.text.includes('zz-globex'));
    const own = await (await signedIn(TOKENS.acme)).get('/');
    assert.ok(own.text.includes('id="pauses"'));
    assert.ok(!own.text.includes('zz-globex'), "a tenant never sees another tenant's pauses");
  });

  it('lists the kind limits on an operator’s overview with their leased jobs, and none to a tenant', async () => {
    await server.queue.setKindLimit({ kindPrefix: 'limited-kind', concurrency: 3, rate: '7/1h', by: 'ops' });
    try {
      await server.queue.enqueue({ kind: 'limited-kind.a' }, acme);
      assert.ok(await server.queue.leaseNext({ workerId: 'w', kinds: ['limited-kind'] }));
      const all = await (await operator()).get('/');
      assert.equal(all.status, 200);
      assert.ok(all.text.includes('id="limits"'));
      assert.match(all.text, /limited-kind\.a<\/a>\s*<span class="badge limited"/);
      assert.match(all.text, /limited-kind<\/td>\s*<td class="num">1<\/td>/);
      assert.match(all.text, /name="concurrency"\s+inputmode="numeric"\s+value="3"/);
      assert.match(all.text, /name="rate"\s+value="7\/1h"/);
      const own = await (await signedIn(TOKENS.acme)).get('/');
      assert.ok(!own.text.includes('id="limits"'), 'limits are for operators');
    } finally {
      await server.queue.clearKindLimit('limited-kind');
    }
  });

  it('resumes a pause from the overview: a tenant its own scope only, with the CSRF token', async () => {
    await server.queue.pause({ kindPrefix: 'email:', scope: acme });
    await server.queue.pause({ kindPrefix: 'sms', scope: globex });
    const browser = await signedIn(TOKENS.acme);
    const form = { kind_prefix: 'email:', scope: 'tenant:acme' };
    assert.equal((await browser.post('/pauses/resume', form)).status, 403, 'no resume without the token');
    const other = await browser.post('/pauses/resume', {
      ...form,
      kind_prefix: 'sms',
      scope: 'tenant:globex',
      _csrf: await browser.csrf(),
    });
    assert.equal(other.status, 403, "another tenant's pause is refused");
    const reply = await browser.post('/pauses/resume', { ...form, _csrf: await browser.csrf() });
    assert.equal(reply.status, 303);
    const left = (await server.queue.pauses()).map((p) => p.kindPrefix);
    assert.ok(!left.includes('email:') && left.includes('sms'), left.join());
  });

  it('retries a Dead job with the CSRF token, and the retry is in its audit trail', async () => {
    const dead = await fixture('dead');
    const browser = await operator();
    const reply = await browser.post(`/jobs/${dead.jobId}/retry`, { _csrf: await browser.csrf() });
    assert.equal(reply.status, 303);
    assert.equal(reply.headers.get('location'), `/jobs/${dead.jobId}?retried=1`);
    const after = await server.queue.show(dead.jobId);
    assert.equal(after.state, JobState.Pending);
    assert.equal(after.events.at(-1)?.transition, 'retried');
    const page = await browser.get(`/jobs/${dead.jobId}?retried=1`);
    assert.ok(page.text.includes('Retried: the job is Pending again.'));
  });

  it('cancels a leased job with the CSRF token, shows it as cancelled, and offers its retry', async () => {
    const leased = await fixture('leased', acme, 'cancel.me');
    const browser = await operator();
    const before = await browser.get(`/jobs/${leased.jobId}`);
    assert.ok(before.text.includes('Cancel this job'));
    assert.equal((await browser.post(`/jobs/${leased.jobId}/cancel`, {})).status, 403);
    assert.equal((await server.queue.show(leased.jobId)).state, JobState.Leased, 'no cancel without the token');
    const reply = await browser.post(`/jobs/${leased.jobId}/cancel`, { _csrf: await browser.csrf() });
    assert.equal(reply.status, 303);
    assert.equal(reply.headers.get('location'), `/jobs/${leased.jobId}?cancelled=1`);
    const after = await server.queue.show(leased.jobId);
    assert.equal(after.state, JobState.Cancelled);
    assert.equal(after.events.at(-1)?.detail, `worker=fixture-worker generation=${leased.leaseGeneration} by=ops`);
    const page = await browser.get(`/jobs/${leased.jobId}?cancelled=1`);
    assert.ok(page.text.includes('Cancelled: the job will not run again'));
    assert.ok(page.text.includes('Retry this job') && !page.text.includes('Cancel this job'));
    const listed = await browser.get('/jobs?state=cancelled&kind=cancel.');
    assert.ok(listed.text.includes(leased.jobId));
    assert.match((await browser.get('/')).text, /data-count="cancelled">\d+</);
    assert.equal((await browser.post(`/jobs/${leased.jobId}/cancel`, { _csrf: await browser.csrf() })).status, 409);
  });

  it('changes nothing without the CSRF token, with a wrong one, or from another site', async () => {
    const dead = await fixture('dead');
    const browser = await operator();
    const csrf = await browser.csrf();
    assert.equal((await browser.post(`/jobs/${dead.jobId}/retry`, {})).status, 403);
    assert.equal((await browser.post(`/jobs/${dead.jobId}/retry`, { _csrf: `${csrf.slice(1)}x` })).status, 403);
    const other = await operator();
    assert.equal((await browser.post(`/jobs/${dead.jobId}/retry`, { _csrf: await other.csrf() })).status, 403);
    const crossSite = await browser.post(
      `/jobs/${dead.jobId}/retry`,
      { _csrf: csrf },
      { origin: 'http://evil.example' },
    );
    assert.equal(crossSite.status, 403);
    assert.equal(
      (await browser.post('/jobs/retry-dead', { _csrf: 'wrong', state: 'dead' })).status,
      403,
      'bulk retry without the token',
    );
    assert.equal((await server.queue.show(dead.jobId)).state, JobState.Dead);
  });

  it('retries every Dead job matching the filter after a confirmation showing the count, and only those', async () => {
    const mine = [await fixture('dead', acme, 'bulk.a'), await fixture('dead', acme, 'bulk.a')];
    const otherKind = await fixture('dead', acme, 'bulk.b');
    const otherTenant = await fixture('dead', globex, 'bulk.a');
    const browser = await operator();
    const confirm = await browser.get('/jobs/retry-dead?state=dead&kind=bulk.a&tenant=acme');
    assert.equal(confirm.status, 200);
    assert.match(confirm.text, /id="bulk-count">2</);
    assert.ok(confirm.text.includes('name="kind" value="bulk.a"'));
    const done = await browser.post('/jobs/retry-dead', {
      _csrf: await browser.csrf(),
      state: 'dead',
      kind: 'bulk.a',
      tenant: 'acme',
    });
    assert.equal(done.status, 200);
    assert.match(done.text, /id="bulk-retried">2</);
    for (const job of mine) assert.equal((await server.queue.show(job.jobId)).state, JobState.Pending);
    assert.equal((await server.queue.show(otherKind.jobId)).state, JobState.Dead);
    assert.equal((await server.queue.show(otherTenant.jobId)).state, JobState.Dead);
  });

  it('answers bad parameters with 400 naming them, and changes nothing', async () => {
    const dead = await fixture('dead', acme, 'bad.params');
    const browser = await operator();
    for (const [path, field] of [
      ['/jobs?state=bogus', 'state'],
      ['/jobs?limit=0', 'limit'],
      ['/jobs?limit=abc', 'limit'],
      ['/jobs?nope=1', 'nope'],
      ['/jobs?state=dead&state=pending', 'state'],
      ['/jobs?created_after=yesterday', 'created_after'],
      ['/jobs?tenant=a%20b', 'tenant'],
      ['/jobs?page_token=not-a-token', 'page_token'],
      ['/jobs/not-a-job-id', 'job_id'],
      ['/leases?worker=a%20b', 'worker'],
      ['/jobs/retry-dead?kind=a%20b', 'kind'],
    ] as const) {
      const reply = await browser.get(path);
      assert.equal(reply.status, 400, path);
      assert.ok(reply.text.includes(`${field}:`), `${path} names ${field}: ${reply.text.slice(0, 200)}`);
    }
    const csrf = await browser.csrf();
    const bad = await browser.post('/jobs/retry-dead', { _csrf: csrf, kind: 'bad.params', created_after: 'soon' });
    assert.equal(bad.status, 400);
    assert.ok(bad.text.includes('created_after'));
    assert.equal((await browser.post('/jobs/not-an-id/retry', { _csrf: csrf })).status, 400);
    assert.equal((await server.queue.show(dead.jobId)).state, JobState.Dead);
  });

  it('sets a strict Content-Security-Policy, nosniff and frame denial on every page', async () => {
    const browser = await operator();
    for (const path of ['/', '/jobs', '/leases', '/login', '/jobs?state=bogus', '/no-such-page']) {
      const reply = await browser.get(path);
      const csp = reply.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'self'/, path);
      assert.match(csp, /script-src 'self'(;|$)/, path);
      assert.match(csp, /frame-ancestors 'none'/, path);
      assert.ok(!csp.includes('unsafe'), path);
      assert.equal(reply.headers.get('x-content-type-options'), 'nosniff', path);
      assert.equal(reply.headers.get('x-frame-options'), 'DENY', path);
    }
  });

  describe('a tenant session', () => {
    it('sees only its own jobs on every page and in the stream', async () => {
      const own = await fixture('leased', acme, 'iso.own');
      const other = await fixture('leased', globex, 'iso.other');
      const otherDead = await fixture('dead', globex, 'iso.other');
      const browser = await signedIn(TOKENS.acme);
      const pages = await Promise.all(
        ['/', '/jobs', '/jobs?state=leased', '/leases', '/jobs?kind=iso.'].map((p) => browser.get(p)),
      );
      for (const page of pages) {
        assert.equal(page.status, 200);
        assert.ok(!page.text.includes('iso.other'), 'another tenant’s kind shown');
        assert.ok(!page.text.includes(other.jobId) && !page.text.includes(otherDead.jobId));
        assert.ok(!page.text.includes('globex'));
      }
      assert.ok(pages[3]?.text.includes(own.jobId));
      assert.ok(!pages[0]?.text.includes('By tenant'));
      assert.equal((await browser.get(`/jobs/${other.jobId}`)).status, 404);
      assert.equal((await browser.get(`/jobs/${other.jobId}/events`)).status, 404, 'nor its stream');
      assert.equal((await browser.get('/jobs?tenant=globex')).status, 403);
      assert.equal((await browser.get('/jobs?tenant=acme')).status, 200);
      const counts = await server.queue.counts(acme);
      const snapshot = await firstEvent(server.http, browser.cookie ?? '');
      const mine = counts.filter((r) => r.state === JobState.Leased).reduce((n, r) => n + r.count, 0);
      assert.equal((snapshot.counts as Record<string, number>)['leased'], mine);
    });

    it('may not retry, not even its own Dead jobs, alone or in bulk', async () => {
      const own = await fixture('dead', acme, 'iso.retry');
      const other = await fixture('dead', globex, 'iso.retry');
      const browser = await signedIn(TOKENS.acme);
      const page = await browser.get(`/jobs/${own.jobId}`);
      assert.ok(!page.text.includes('Retry this job'));
      const csrf = await browser.csrf();
      assert.equal((await browser.post(`/jobs/${own.jobId}/retry`, { _csrf: csrf })).status, 403);
      assert.equal((await browser.post(`/jobs/${other.jobId}/retry`, { _csrf: csrf })).status, 403);
      assert.equal((await browser.post('/jobs/retry-dead', { _csrf: csrf, state: 'dead' })).status, 403);
      assert.equal((await browser.get('/jobs/retry-dead?state=dead')).status, 403);
      assert.equal((await server.queue.show(own.jobId)).state, JobState.Dead);
      assert.equal((await server.queue.show(other.jobId)).state, JobState.Dead);
    });

    it("cancels its own job, and gets not found for another tenant's, which stays as it was", async () => {
      const own = await fixture('pending', acme, 'iso.cancel');
      const other = await fixture('pending', globex, 'iso.cancel');
      const browser = await signedIn(TOKENS.acme);
      assert.ok((await browser.get(`/jobs/${own.jobId}`)).text.includes('Cancel this job'));
      const csrf = await browser.csrf();
      assert.equal((await browser.post(`/jobs/${other.jobId}/cancel`, { _csrf: csrf })).status, 404);
      assert.equal((await browser.post(`/jobs/${own.jobId}/cancel`, { _csrf: csrf })).status, 303);
      assert.equal((await server.queue.show(own.jobId)).state, JobState.Cancelled);
      assert.deepEqual(await server.queue.show(other.jobId), other);
      assert.ok(!(await browser.get(`/jobs/${own.jobId}`)).text.includes('Retry this job'), 'only operators retry');
    });

    it('may not read /metrics, which span every tenant', async () => {
      const reply = await fetch(`${server.http}/metrics`, { headers: { authorization: `Bearer ${TOKENS.acme}` } });
      assert.equal(reply.status, 403);
    });
  });
});

interface ServerSentEvent {
  readonly event: string;
  readonly id: string | null;
  readonly data: Record<string, unknown>;
}

/** The first `count` events of a server-sent event stream, read as a browser reads them. */
async function serverSentEvents(
  base: string,
  path: string,
  cookie: string,
  count: number,
  headers: Record<string, string> = {},
): Promise<ServerSentEvent[]> {
  const abort = new AbortController();
  const response = await fetch(base + path, { headers: { cookie, ...headers }, signal: abort.signal });
  assert.equal(response.status, 200, await (response.status === 200 ? '' : response.text()));
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const events: ServerSentEvent[] = [];
  let text = '';
  while (events.length < count) {
    const { value, done } = await reader.read();
    assert.ok(!done, `the stream ended after ${events.length} events`);
    text += Buffer.from(value).toString();
    let end: number;
    while ((end = text.indexOf('\n\n')) >= 0 && events.length < count) {
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      const field = (name: string): string | null => new RegExp(`^${name}: (.*)$`, 'm').exec(block)?.[1] ?? null;
      const data = field('data');
      if (data !== null) events.push({ event: field('event') ?? 'message', id: field('id'), data: JSON.parse(data) });
    }
  }
  abort.abort();
  return events;
}

/** The first server-sent event of /events for this session. */
async function firstEvent(base: string, cookie: string): Promise<Record<string, unknown>> {
  const abort = new AbortController();
  const response = await fetch(`${base}/events`, { headers: { cookie }, signal: abort.signal });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let text = '';
  while (!text.includes('\n\n')) {
    const { value, done } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString();
  }
  abort.abort();
  const data = /^data: (.*)$/m.exec(text)?.[1];
  assert.ok(data, `no event in ${text}`);
  return JSON.parse(data) as Record<string, unknown>;
}

describe('the HTTP listener without tokens', () => {
  it('serves every caller as an operator on loopback, with a session for the CSRF token', async () => {
    const server = await startTestServer();
    try {
      const browser = new Browser(server.http);
      const home = await browser.get('/');
      assert.equal(home.status, 200);
      assert.ok(browser.cookie, 'a session cookie was set');
      assert.ok(!home.text.includes('Log out'));
      const dead = await jobIn({ queue: server.queue } as Harness, acme, 'dead');
      assert.equal((await browser.post(`/jobs/${dead.jobId}/retry`, {})).status, 403);
      assert.equal((await browser.post(`/jobs/${dead.jobId}/retry`, { _csrf: await browser.csrf() })).status, 303);
      const metrics = await fetch(`${server.http}/metrics`);
      assert.equal(metrics.status, 200);
    } finally {
      await server.close();
    }
  });

  it('refuses a non-loopback HTTP address without tokens, naming the key, and listens on none when it is empty', async () => {
    const dir = tempDir('telha-http-');
    const queue = await openQueue({ inMemory: true, services: false });
    try {
      const config = makeConfig({
        storage: { path: dir },
        server: { address: '127.0.0.1:0', http_address: '0.0.0.0:0' },
      });
      await assert.rejects(startServer({ queue, config, logger: silentLogger }), /server\.http_address/);
      const off = makeConfig({ storage: { path: dir }, server: { address: '127.0.0.1:0', http_address: '' } });
      const running = await startServer({ queue, config: off, logger: silentLogger });
      assert.equal(running.http, null);
      await running.close();
    } finally {
      await queue.close();
    }
  });

  it('is not ready once the queue is closed', async () => {
    const server = await startTestServer();
    try {
      await server.queue.close();
      const ready = await fetch(`${server.http}/readyz`);
      assert.equal(ready.status, 503);
      assert.match(await ready.text(), /not ready/);
      assert.equal((await fetch(`${server.http}/healthz`)).status, 200);
    } finally {
      await server.close();
    }
  });
});
