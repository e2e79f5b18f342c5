/**
 * The Schedules page's controls over real sockets: create a schedule from the form, edit it, run
 * it now, pause and resume it, delete it (asking first), each with the session's CSRF token and
 * the gRPC calls' permission and scope (a tenant its own scope's, an operator any it names); a
 * refused form comes back with the field named and the values as typed, and nothing written.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { tenantScope } from '../../src/core/types.ts';
import { dashboardServer } from '../support/http.ts';
import { TOKENS } from '../support/refuses.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');

describe('the Schedules page controls', () => {
  const { server, signedIn } = dashboardServer();

  afterEach(async () => {
    for (const s of (await server.queue.listSchedules({ limit: 1000 })).schedules) {
      await server.queue.deleteSchedule(s.name, s.scope);
    }
  });

  const form = {
    scope: 'tenant:acme',
    name: 'nightly',
    cron: '0 2 * * *',
    timezone: 'Europe/Berlin',
    every_secs: '',
    kind: 'report.nightly',
    payload: '{"full":true}',
    priority: '5',
    max_attempts: '3',
    timeout_secs: '',
  };

  it('creates a schedule from the form, then edits its timing and its job', async () => {
    const browser = await signedIn(TOKENS.operator);
    const blank = await browser.get('/schedules/new');
    assert.equal(blank.status, 200);
    assert.match(blank.text, /<option value="tenant:acme"/);
    const csrf = await browser.csrf();
    const created = await browser.post('/schedules/create', { _csrf: csrf, ...form });
    assert.equal(created.status, 303, created.text.slice(0, 300));
    assert.equal(created.headers.get('location'), '/schedules?done=created&name=nightly');
    const stored = await server.queue.getSchedule('nightly', acme);
    assert.deepEqual(
      [stored.cron, stored.timezone, stored.job.kind, stored.job.priority, stored.job.maxAttempts, stored.paused],
      ['0 2 * * *', 'Europe/Berlin', 'report.nightly', 5, 3, false],
    );
    assert.equal(Buffer.from(stored.job.payload).toString(), '{"full":true}');
    const listed = await browser.get('/schedules?done=created&name=nightly');
    assert.ok(listed.text.includes('Schedule <b>nightly</b> created.'));

    const edit = await browser.get('/schedules/edit?scope=tenant%3Aacme&name=nightly');
    assert.equal(edit.status, 200);
    assert.match(edit.text, /name="cron" value="0 2 \* \* \*"/);
    assert.match(edit.text, /<textarea name="payload" spellcheck="false">\{&quot;full&quot;:true\}<\/textarea>/);
    const untouched = await browser.post('/schedules/update', { _csrf: csrf, ...form, kind: 'report.v2' });
    assert.equal(untouched.status, 303);
    const renamed = await server.queue.getSchedule('nightly', acme);
    assert.equal(renamed.job.kind, 'report.v2');
    assert.equal(renamed.nextDueAt, stored.nextDueAt, 'an untouched timing keeps its next due time');
    const retimed = await browser.post('/schedules/update', {
      _csrf: csrf,
      ...form,
      cron: '',
      timezone: 'Europe/Berlin',
      every_secs: '3600',
    });
    assert.equal(retimed.status, 303, retimed.text.slice(0, 300));
    const hourly = await server.queue.getSchedule('nightly', acme);
    assert.deepEqual([hourly.cron, hourly.timezone, hourly.everySecs], [null, null, 3600]);
  });

  it('answers a bad form with the field named and what was typed, creating or changing nothing', async () => {
    const browser = await signedIn(TOKENS.operator);
    const csrf = await browser.csrf();
    const cases: [Record<string, string>, RegExp][] = [
      [{ cron: '* * *' }, /role="alert">cron: /],
      [{ cron: '0 2 * * *', every_secs: '60' }, /role="alert">every_secs: give either cron or every_secs/],
      [{ timezone: 'Mars/Olympus' }, /role="alert">timezone: /],
      [{ priority: 'high' }, /role="alert">job\.priority: &quot;high&quot; is not a whole number/],
      [{ priority: '300' }, /role="alert">job\.priority: /],
      [{ kind: '' }, /role="alert">job\.kind: /],
      [{ name: 'two words' }, /role="alert">name: /],
    ];
    for (const [change, message] of cases) {
      const reply = await browser.post('/schedules/create', { _csrf: csrf, ...form, ...change });
      assert.equal(reply.status, 400, JSON.stringify(change));
      assert.match(reply.text, message);
      assert.match(reply.text, /id="schedule-form"/, 'the form again');
      for (const [name, value] of Object.entries(change).filter(([n]) => n !== 'name')) {
        assert.ok(reply.text.includes(`name="${name}" value="${value}"`), `${name} as typed`);
      }
    }
    assert.deepEqual((await server.queue.listSchedules()).schedules, [], 'nothing created');

    await server.queue.createSchedule({ name: 'nightly', everySecs: 60, job: { kind: 'k' } }, acme);
    const before = await server.queue.getSchedule('nightly', acme);
    const taken = await browser.post('/schedules/create', { _csrf: csrf, ...form });
    assert.equal(taken.status, 409);
    assert.match(taken.text, /schedule nightly already exists/);
    const bad = await browser.post('/schedules/update', { _csrf: csrf, ...form, every_secs: '0', cron: '' });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /role="alert">every_secs: /);
    assert.match(bad.text, /action="\/schedules\/update"/);
    assert.deepEqual(await server.queue.getSchedule('nightly', acme), before, 'nothing changed');
  });

  it('runs a schedule now, pauses, resumes and deletes it from its row, asking before run and delete', async () => {
    const created = await server.queue.createSchedule(
      { name: 'hourly', everySecs: 3600, job: { kind: 'tick', payload: 'p' } },
      acme,
    );
    const browser = await signedIn(TOKENS.acme);
    const page = await browser.get('/schedules');
    assert.match(
      page.text,
      /action="\/schedules\/run"\s+class="inline"\s+data-confirm="Enqueue a job of schedule hourly now\?/,
    );
    assert.match(page.text, /action="\/schedules\/delete"\s+class="inline"\s+data-confirm="Delete schedule hourly\?/);
    const csrf = await browser.csrf();
    const which = { _csrf: csrf, scope: 'tenant:acme', name: 'hourly' };

    const ran = await browser.post('/schedules/run', which);
    assert.equal(ran.status, 303);
    const location = ran.headers.get('location') ?? '';
    const jobId = new URL(location, server.http).searchParams.get('job') ?? '';
    const job = await server.queue.show(jobId);
    assert.deepEqual([job.kind, job.tenant], ['tick', 'acme']);
    assert.equal((await server.queue.getSchedule('hourly', acme)).nextDueAt, created.nextDueAt);
    assert.ok((await browser.get(location)).text.includes(`href="/jobs/${jobId}"`));

    assert.equal((await browser.post('/schedules/pause', which)).status, 303);
    assert.equal((await server.queue.getSchedule('hourly', acme)).paused, true);
    assert.match((await browser.get('/schedules')).text, /action="\/schedules\/resume"/);
    assert.equal((await browser.post('/schedules/resume', which)).status, 303);
    assert.equal((await server.queue.getSchedule('hourly', acme)).paused, false);
    const deleted = await browser.post('/schedules/delete', which);
    assert.equal(deleted.headers.get('location'), '/schedules?done=deleted&name=hourly');
    assert.deepEqual((await server.queue.listSchedules()).schedules, []);
    const gone = await browser.post('/schedules/run', which);
    assert.equal(gone.status, 404);
    assert.match(gone.text, /role="alert">schedule hourly not found/);
  });

  it("refuses a change without the CSRF token, from another site, or to another tenant's schedule", async () => {
    await server.queue.createSchedule({ name: 'theirs', everySecs: 60, job: { kind: 'k' } }, globex);
    const browser = await signedIn(TOKENS.acme);
    const csrf = await browser.csrf();
    const theirs = { scope: 'tenant:globex', name: 'theirs' };
    for (const path of ['/schedules/run', '/schedules/pause', '/schedules/delete']) {
      assert.equal((await browser.post(path, theirs)).status, 403, `${path} without the CSRF token`);
      assert.equal((await browser.post(path, { _csrf: csrf, ...theirs })).status, 403, `${path} naming globex`);
      assert.equal((await browser.post(path, { _csrf: csrf, name: 'theirs' })).status, 404, `${path} in acme`);
    }
    const crossSite = await browser.post(
      '/schedules/create',
      { _csrf: csrf, ...form, scope: '' },
      { origin: 'https://elsewhere.example' },
    );
    assert.equal(crossSite.status, 403);
    assert.equal((await browser.get('/schedules/edit?scope=tenant%3Aglobex&name=theirs')).status, 403);
    const schedules = (await server.queue.listSchedules()).schedules;
    assert.deepEqual(
      schedules.map((s) => [s.name, s.paused]),
      [['theirs', false]],
      'nothing created, paused or deleted',
    );
    assert.equal((await server.queue.list({ scope: globex })).jobs.length, 0, 'nothing run');
    const own = await browser.post('/schedules/create', { _csrf: csrf, ...form, scope: '' });
    assert.equal(own.status, 303, 'a tenant creates in its own scope');
    assert.equal((await server.queue.getSchedule('nightly', acme)).name, 'nightly');
  });
});
