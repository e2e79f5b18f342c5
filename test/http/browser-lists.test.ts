/**
 * The list pages in a real browser (Debian's Chromium, playwright-core): a
 * refused filter shows its message where the rows were, the job-id box opens
 * a job, Dead rows carry their last error, and the Jobs, Leases and
 * Schedules pages follow the queue with no reload.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { logIn, openDashboardBrowser, type DashboardBrowser } from '../support/dashboard-browser.ts';
import { tenantScope } from '../../src/core/types.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const OPERATOR = 'operator-token-for-the-list-pages';
const acme = tenantScope('acme');

// The little of the DOM the functions below use; they run in the page, where the real one is.
declare const document: {
  querySelector(selector: string): { textContent: string | null } | null;
  querySelectorAll(selector: string): { length: number };
};

describe('the list pages in a browser', () => {
  let server: TestServer;
  let browser: DashboardBrowser;
  let page: Page;

  before(async () => {
    server = await startTestServer({
      server: { tokens: [{ token: OPERATOR, role: 'operator', name: 'lists-test' }] },
      metrics: { refresh_ms: 100 },
    });
    // A refused filter (400) and a job id that opens none (404) answer so on purpose.
    browser = await openDashboardBrowser({ allowRefusals: true });
    page = browser.page;
    await logIn(page, server.http, OPERATOR);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** Marks the page; a reload would lose the mark. */
  const mark = (): Promise<unknown> => page.evaluate(() => Object.assign(globalThis, { telhaMark: 'no reload' }));
  const marked = async (): Promise<boolean> =>
    (await page.evaluate(() => (globalThis as { telhaMark?: string }).telhaMark)) === 'no reload';

  it('shows a Dead job’s last error in its row', async () => {
    const { job } = await server.queue.enqueue({ kind: 'mail.bounce' }, acme);
    const leased = await server.queue.leaseNext({ workerId: 'w-1', kinds: ['mail.bounce'] });
    assert.equal(leased?.jobId, job.jobId);
    await server.queue.fail(
      job.jobId,
      { workerId: 'w-1', leaseGeneration: leased.leaseGeneration },
      {
        error: 'mailbox does not exist',
        permanent: true,
      },
    );
    await page.goto(`${server.http}/jobs?state=dead`);
    assert.equal(await page.locator('#results td.last-error').innerText(), 'mailbox does not exist');
  });

  it('shows a refused filter value as a message where the rows were, and the rows again once it is fixed', async () => {
    await page.goto(`${server.http}/jobs`);
    await mark();
    assert.ok((await page.locator('#results tbody tr').count()) > 0);
    await page.fill('input[name="kind"]', 'has space');
    await page.press('input[name="kind"]', 'Enter');
    await page.locator('#results .notice.error').waitFor();
    assert.match(await page.locator('#results .notice.error').innerText(), /^kind: /);
    assert.equal(await page.locator('#results tbody tr').count(), 0, 'the old rows are gone');
    await page.fill('input[name="kind"]', 'mail.');
    await page.press('input[name="kind"]', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('#results tbody tr').length === 1);
    assert.ok(await marked(), 'all of it without a reload');
  });

  it('opens a job from the job-id box, and says so when there is none', async () => {
    const { job } = await server.queue.enqueue({ kind: 'find.me' }, acme);
    await page.goto(`${server.http}/jobs`);
    await page.fill('form.find input[name="id"]', job.jobId);
    await Promise.all([page.waitForURL(`${server.http}/jobs/${job.jobId}`), page.press('form.find input', 'Enter')]);
    assert.match(await page.locator('h1').innerText(), /find\.me/);
    await page.goto(`${server.http}/jobs`);
    await page.fill('form.find input[name="id"]', '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b');
    await page.press('form.find input', 'Enter');
    await page.locator('.notice.error').waitFor();
    assert.equal(await page.locator('.notice.error').innerText(), 'No job 0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b here.');
  });

  it('adds a job to the open Jobs list as it is enqueued, with no reload', async () => {
    await page.goto(`${server.http}/jobs?kind=live.`);
    await page.locator('#live[data-state="live"]').waitFor();
    await mark();
    assert.equal(await page.locator('#results tbody tr').count(), 0);
    const { job } = await server.queue.enqueue({ kind: 'live.new' }, acme);
    await page.locator(`#results a[href="/jobs/${job.jobId}"]`).waitFor();
    assert.ok(await marked());
  });

  it('shows a lease on the open Leases page as it is taken, and drops it as it completes', async () => {
    const { job } = await server.queue.enqueue({ kind: 'live.lease' }, acme);
    await page.goto(`${server.http}/leases`);
    await page.locator('#live[data-state="live"]').waitFor();
    await mark();
    assert.equal(await page.locator(`a[href="/jobs/${job.jobId}"]`).count(), 0);
    const leased = await server.queue.leaseNext({ workerId: 'w-live', kinds: ['live.lease'] });
    assert.equal(leased?.jobId, job.jobId);
    await page.locator(`#live-list a[href="/jobs/${job.jobId}"]`).waitFor();
    await server.queue.complete(job.jobId, { workerId: 'w-live', leaseGeneration: leased.leaseGeneration });
    await page.locator(`#live-list a[href="/jobs/${job.jobId}"]`).waitFor({ state: 'detached' });
    assert.ok(await marked());
  });

  it('shows a schedule on the open Schedules page as it is created, with no reload', async () => {
    await page.goto(`${server.http}/schedules`);
    await page.locator('#live[data-state="live"]').waitFor();
    await mark();
    await server.queue.createSchedule({ name: 'nightly-live', everySecs: 3600, job: { kind: 'live.nightly' } }, acme);
    await page.locator('#live-list >> text=nightly-live').waitFor();
    assert.ok(await marked());
    assert.deepEqual(browser.problems, []);
  });
});
