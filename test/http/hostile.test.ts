/**
 * Everything a job carries is the producer's to choose: kinds, tenants,
 * payloads, error messages, idempotency keys, worker ids, schedule names, paused
 * prefixes and limited ones full of markup and `javascript:` URLs render as inert
 * text on every page.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { tenantScope } from '../../src/core/types.ts';
import { Browser } from '../support/http.ts';
import { liveServer } from '../support/server.ts';

/** Markup without whitespace fits where kinds, tenants and worker ids go. */
const TIGHT = ['<script>alert(1)</script>', '"><img/src=x/onerror=alert(1)>', 'javascript:alert(1)'];
const LOOSE = '<script>alert(1)</script> "><img src=x onerror=alert(1)> javascript:alert(1) \'><svg onload=alert(1)>';

/** What would run if it reached the page as markup. */
function assertInert(text: string, where: string): void {
  assert.ok(!text.includes('<script>alert'), `${where}: a script element`);
  assert.ok(!/<img/i.test(text), `${where}: an img element`);
  assert.ok(!/<svg/i.test(text), `${where}: an svg element`);
  assert.ok(!/(href|src|action)="\s*javascript:/i.test(text), `${where}: a javascript: URL`);
  // Escaped text holds no `<`: a handler can only be an attribute of a real tag.
  assert.ok(!/<[a-z][^>]*\son[a-z]+=/i.test(text), `${where}: an event handler attribute`);
}

describe('hostile job content', () => {
  const { server } = liveServer();
  const ids: string[] = [];

  before(async () => {
    const q = server.queue;
    for (const [i, word] of TIGHT.entries()) {
      const scope = tenantScope(word);
      const { job } = await q.enqueue({ kind: word, payload: LOOSE, idempotencyKey: `${LOOSE} ${i}` }, scope);
      ids.push(job.jobId);
      const leased = await q.leaseNext({ workerId: word, scope });
      assert.ok(leased);
      if (i === 0) continue; // stays leased, for the leases page
      await q.fail(
        job.jobId,
        { workerId: word, leaseGeneration: leased.leaseGeneration },
        { error: LOOSE, permanent: true },
      );
    }
    // The controls' panels and pages show names, prefixes and templates a tenant chose.
    for (const word of TIGHT) {
      const scope = tenantScope(word);
      await q.createSchedule({ name: word, everySecs: 60, job: { kind: word, payload: LOOSE } }, scope);
      await q.pause({ kindPrefix: word, scope, by: word });
      await q.setKindLimit({ kindPrefix: word, concurrency: 100, by: word });
    }
  });

  it('renders as text on every page', async () => {
    const browser = new Browser(server.http);
    const paths = [
      '/',
      '/jobs',
      '/jobs?state=dead',
      '/leases',
      ...ids.map((id) => `/jobs/${id}`),
      ...TIGHT.map((word) => `/jobs?${new URLSearchParams({ tenant: word, kind: word }).toString()}`),
      ...TIGHT.map((word) => `/leases?${new URLSearchParams({ worker: word }).toString()}`),
      `/jobs/retry-dead?${new URLSearchParams({ kind: TIGHT[0] as string, tenant: TIGHT[1] as string }).toString()}`,
      '/%3Cscript%3Ealert(1)%3C/script%3E',
      '/schedules',
      ...TIGHT.map(
        (word) => `/schedules/edit?${new URLSearchParams({ scope: `tenant:${word}`, name: word }).toString()}`,
      ),
      ...TIGHT.map((word) => `/schedules?${new URLSearchParams({ done: 'deleted', name: word }).toString()}`),
    ];
    for (const path of paths) {
      const page = await browser.get(path);
      assert.ok(page.status === 200 || page.status === 404, `${path}: ${page.status}`);
      assertInert(page.text, path);
    }
    const job = await browser.get(`/jobs/${ids[1] ?? ''}`);
    assert.ok(job.text.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), 'the payload and error shown as text');
    assert.ok(job.text.includes('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;'));
    const edit = await browser.get(
      `/schedules/edit?${new URLSearchParams({ scope: `tenant:${TIGHT[1] ?? ''}`, name: TIGHT[1] ?? '' }).toString()}`,
    );
    assert.equal(edit.status, 200);
    assert.ok(edit.text.includes('value="&quot;&gt;&lt;img/src=x/onerror=alert(1)&gt;"'), 'the name as text');
    assert.ok(edit.text.includes('&lt;svg onload=alert(1)&gt;</textarea>'), 'the payload as text');
    const list = await browser.get('/jobs');
    assert.ok(list.text.includes('&quot;&gt;&lt;img/src=x/onerror=alert(1)&gt;'), 'kind and tenant shown as text');
  });

  it('keeps producer data out of URLs except as encoded query values', async () => {
    const overview = await new Browser(server.http).get('/');
    for (const href of overview.text.matchAll(/href="([^"]*)"/g)) {
      assert.match(href[1] ?? '', /^\/($|[^/])/, `a link that is not a path of this site: ${href[1]}`);
    }
    assert.ok(
      overview.text.includes(`href="/jobs?${new URLSearchParams({ kind: 'javascript:alert(1)' }).toString()}"`),
    );
  });
});
