/**
 * The dashboard in a real browser: Debian's Chromium driven by
 * playwright-core against a server with both listeners. Log in with a
 * token, read the counts, watch them change as jobs are enqueued, filter the
 * list, open a job and read its audit trail, retry it and see it Pending,
 * download a long value the page shows only the start of;
 * and through all of it, hostile job content never runs and the page breaks
 * no rule of its Content-Security-Policy.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { openDashboardBrowser, submitToken, type DashboardBrowser } from '../support/dashboard-browser.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const OPERATOR = 'operator-token-for-the-browser';
const HOSTILE = '<script>alert(1)</script>"><img/src=x/onerror=alert(1)>';
const acme = tenantScope('acme');

// The little of the DOM the functions below use; they run in the page, where the real one is.
declare const document: {
  querySelector(selector: string): { textContent: string | null } | null;
  querySelectorAll(selector: string): { length: number };
};

describe('the dashboard in a browser', () => {
  let server: TestServer;
  let browser: DashboardBrowser;
  let page: Page;
  let deadId: string;

  before(async () => {
    server = await startTestServer({
      server: { tokens: [{ token: OPERATOR, role: 'operator', name: 'browser-test' }] },
      metrics: { refresh_ms: 250 },
    });
    const q = server.queue;
    await q.enqueueBatch(
      Array.from({ length: 6 }, (_, i) => ({ kind: i % 2 === 0 ? 'email.welcome' : 'report.daily' })),
      acme,
    );
    const { job } = await q.enqueue({ kind: 'email.bounce', payload: `{"note":${JSON.stringify(HOSTILE)}}` }, acme);
    const leased = await q.leaseNext({ workerId: 'worker-42', kinds: ['email.bounce'] });
    assert.ok(leased);
    const fence = { workerId: 'worker-42', leaseGeneration: leased.leaseGeneration };
    await q.heartbeat(job.jobId, fence);
    await q.fail(job.jobId, fence, { error: `mailbox does not exist ${HOSTILE}`, permanent: true });
    deadId = job.jobId;
    await q.enqueue(
      { kind: 'hostile', payload: HOSTILE, idempotencyKey: HOSTILE },
      tenantScope(HOSTILE.replace(/\s/g, '')),
    );

    // The questions the dashboard asks before a job action: answered yes, and checked where asked.
    browser = await openDashboardBrowser({
      confirmations: ['Retry this job? It goes back to Pending with its attempts reset.'],
    });
    page = browser.page;
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** The number a state's card shows. */
  const card = (state: string): Promise<number> =>
    page
      .locator(`[data-count="${state}"]`)
      .innerText()
      .then((text) => Number(text.replace(/,/g, '')));

  it('asks for a token, then shows the counts', async () => {
    await page.goto(server.http);
    assert.equal(new URL(page.url()).pathname, '/login');
    await submitToken(page, server.http, OPERATOR);
    assert.equal(await page.locator('h1').innerText(), 'Overview');
    assert.equal(await card('pending'), 7);
    assert.equal(await card('dead'), 1);
    assert.ok(await page.locator('text=email.welcome').isVisible());
  });

  it('updates the overview live as jobs are enqueued', async () => {
    await page.locator('#live[data-state="live"]').waitFor();
    await page.waitForSelector('#chart-throughput canvas');
    await server.queue.enqueueBatch(
      Array.from({ length: 5 }, () => ({ kind: 'email.welcome' })),
      acme,
    );
    // The page's own signal: its Pending card changes when the stream's next sample arrives.
    await page.waitForFunction(() => document.querySelector('[data-count="pending"]')?.textContent === '12');
    assert.equal(await card('pending'), 12);
  });

  it('filters the jobs list without leaving the page', async () => {
    await page.click('nav >> text=Jobs');
    await page.waitForURL(`${server.http}/jobs`);
    assert.equal(await page.locator('#results tbody tr').count(), 13);
    await page.selectOption('select[name="state"]', 'dead');
    await page.waitForFunction(() => document.querySelectorAll('#results tbody tr').length === 1);
    assert.equal(new URL(page.url()).searchParams.get('state'), 'dead', 'the filter is in the address bar');
    assert.ok(await page.locator(`#results a[href="/jobs/${deadId}"]`).isVisible());
    await page.selectOption('select[name="state"]', '');
    await page.fill('input[name="kind"]', 'report.');
    await page.press('input[name="kind"]', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('#results tbody tr').length === 3);
  });

  it('opens a job and reads its audit trail', async () => {
    await page.goto(`${server.http}/jobs?state=dead`);
    await Promise.all([page.waitForURL(`${server.http}/jobs/${deadId}`), page.click(`a[href="/jobs/${deadId}"]`)]);
    const events = await page.locator('.timeline .event .title').allInnerTexts();
    assert.deepEqual(events, ['Enqueued', 'Leased', 'Heartbeat', 'Failed', 'Dead-lettered']);
    const trail = await page.locator('.timeline').innerText();
    assert.match(trail, /worker worker-42/);
    assert.match(trail, /generation 1/);
    assert.ok(trail.includes(`mailbox does not exist ${HOSTILE}`), 'the error, as text');
    assert.ok((await page.locator('.payload').innerText()).includes('"note": "<script>alert(1)</script>'));
  });

  it('retries the Dead job and shows it Pending', async () => {
    await Promise.all([page.waitForURL(`${server.http}/jobs/${deadId}?retried=1`), page.click('#retry')]);
    assert.deepEqual(
      browser.asked,
      ['Retry this job? It goes back to Pending with its attempts reset.'],
      'asked first',
    );
    assert.equal(await page.locator('h1 .badge').innerText(), 'pending');
    assert.ok(await page.locator('text=Retried: the job is Pending again.').isVisible());
    assert.equal((await page.locator('.timeline .event .title').allInnerTexts()).at(-1), 'Retried by an operator');
    assert.equal((await server.queue.show(deadId)).state, JobState.Pending);
  });

  it('follows an open job live: its progress, then its completion and result, with no reload', async () => {
    // On the page the retry left open, Pending again. A reload would lose this mark.
    await page.evaluate(() => Object.assign(globalThis, { telhaMark: 'still here' }));
    await page.locator('#live[data-state="live"]').waitFor();
    const leased = await server.queue.leaseNext({ workerId: 'worker-7', kinds: ['email.bounce'] });
    assert.equal(leased?.jobId, deadId);
    const fence = { workerId: 'worker-7', leaseGeneration: leased.leaseGeneration };
    await server.queue.heartbeat(deadId, fence, { progress: '{"sent":41,"of":100}' });
    await page.waitForFunction(() => document.querySelector('h1 .badge')?.textContent === 'leased');
    await page.locator('text="sent": 41').waitFor();
    await server.queue.complete(deadId, fence, { result: new TextEncoder().encode('{"delivered":true}') });
    await page.waitForFunction(() => document.querySelector('h1 .badge')?.textContent === 'completed');
    assert.ok((await page.locator('.payload').allInnerTexts()).some((text) => text.includes('"delivered": true')));
    assert.equal((await page.locator('.timeline .event .title').allInnerTexts()).at(-1), 'Completed');
    assert.equal(await page.locator('#cancel').count(), 0, 'no Cancel on a Completed job');
    assert.equal(await page.evaluate(() => (globalThis as { telhaMark?: string }).telhaMark), 'still here');
  });

  it('shows the first part of a long value, says it is cut, and downloads it whole', async () => {
    const payload = JSON.stringify(Array.from({ length: 1_500 }, (_, n) => ({ n, nested: [[[[[n]]]]] })));
    const { job } = await server.queue.enqueue({ kind: 'report.long', payload }, acme);
    await page.goto(`${server.http}/jobs/${job.jobId}`);
    assert.match(
      await page.locator('.hint.truncated').innerText(),
      /^Truncated: showing the first [\d,]+ of 50,281 bytes/,
    );
    assert.ok((await page.locator('.payload').innerText()).startsWith('[\n  {\n    "n": 0,\n    "nested": [\n'));
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('.hint.truncated a.download')]);
    assert.equal(download.suggestedFilename(), `${job.jobId}.payload.bin`);
    assert.equal(readFileSync(await download.path(), 'utf8'), payload, 'the whole payload, byte for byte');
  });

  it('lets no hostile job content run, and breaks no rule of its own policy', async () => {
    for (const path of ['/', '/jobs', `/jobs/${deadId}`, '/leases']) {
      await page.goto(server.http + path);
      assert.equal(await page.locator('img').count(), 0, `${path}: an injected img element`);
      assert.equal(await page.locator('script:not([src])').count(), 0, `${path}: an inline script`);
    }
    assert.deepEqual(browser.dialogs, []);
    assert.deepEqual(browser.problems, []);
  });
});
