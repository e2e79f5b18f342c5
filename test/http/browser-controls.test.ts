/**
 * The controls in a real browser (Debian's Chromium, playwright-core): pause a kind prefix and
 * resume it, set a kind limit, change it in its row and see a refused value as a message; create
 * a schedule from its form (a refused cron first, shown as a message), edit it, run it now, pause
 * and resume it, and delete it, answering the confirmations the dashboard asks.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { logIn, openDashboardBrowser, type DashboardBrowser } from '../support/dashboard-browser.ts';
import { tenantScope } from '../../src/core/types.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const OPERATOR = 'operator-token-for-the-controls';
const acme = tenantScope('acme');

describe('the controls in a browser', () => {
  let server: TestServer;
  let browser: DashboardBrowser;
  let page: Page;
  /** The questions the dashboard asks before an action, answered yes. */
  const confirmations = [
    'Enqueue a job of schedule nightly now? Its next due time stays.',
    'Delete schedule nightly? It stops firing; the jobs it enqueued stay.',
  ];

  before(async () => {
    server = await startTestServer({
      server: { tokens: [{ token: OPERATOR, role: 'operator', name: 'controls-test' }] },
    });
    // A job of acme's makes the tenant one the server knows, offered in the scope choices.
    await server.queue.enqueue({ kind: 'email.welcome' }, acme);
    // A refused form answers 400 (or 404) on purpose, with its message on the page.
    browser = await openDashboardBrowser({ confirmations, allowRefusals: true });
    page = browser.page;
    await logIn(page, server.http, OPERATOR);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('pauses a kind prefix in a tenant from the overview, then resumes it', async () => {
    await page.fill('#pause-form input[name="kind_prefix"]', 'email.');
    await page.selectOption('#pause-form select[name="scope"]', 'tenant:acme');
    await Promise.all([page.waitForURL(`${server.http}/#pauses`), page.click('#pause')]);
    const row = page.locator('#pauses tbody tr', { hasText: 'email.' });
    assert.equal(await row.locator('td').nth(1).innerText(), 'tenant acme');
    assert.deepEqual(
      (await server.queue.pauses()).map((p) => [p.scope, p.kindPrefix]),
      [[acme, 'email.']],
    );
    assert.ok(await page.locator('a:text("email.welcome") + .badge.paused').isVisible(), 'its kind says paused');
    await Promise.all([page.waitForURL(`${server.http}/#pauses`), row.locator('button:text("Resume")').click()]);
    assert.equal(await page.locator('#pauses tbody tr').count(), 0);
    assert.deepEqual(await server.queue.pauses(), []);
  });

  it('sets a kind limit, changes it in its row, and shows a refused value as a message', async () => {
    await page.fill('#limit-form input[name="kind_prefix"]', 'email.');
    await page.fill('#limit-form input[name="concurrency"]', '4');
    await Promise.all([page.waitForURL(`${server.http}/#limits`), page.click('#set-limit')]);
    const row = page.locator('#limits tr[data-prefix="email."]');
    assert.equal(await row.locator('input[name="concurrency"]').inputValue(), '4');
    await row.locator('input[name="rate"]').fill('20/1m');
    await Promise.all([page.waitForURL(`${server.http}/#limits`), row.locator('button:text("Save")').click()]);
    const [limit] = await server.queue.kindLimits();
    assert.deepEqual([limit?.concurrency, limit?.rate], [4, { count: 20, periodMs: 60_000 }]);

    await page.locator('#limits tr[data-prefix="email."] input[name="concurrency"]').fill('lots');
    await Promise.all([
      page.waitForResponse((r) => r.url() === `${server.http}/limits/set` && r.status() === 400),
      page.locator('#limits tr[data-prefix="email."] button:text("Save")').click(),
    ]);
    assert.equal(await page.locator('#limits .notice.error').innerText(), 'concurrency: "lots" is not a whole number');
    assert.equal(
      await page.locator('#limits tr[data-prefix="email."] input[name="concurrency"]').inputValue(),
      'lots',
      'the value as typed',
    );
    assert.equal((await server.queue.kindLimits())[0]?.concurrency, 4, 'nothing written');
    await page.goto(`${server.http}/`);
    await Promise.all([
      page.waitForURL(`${server.http}/#limits`),
      page.locator('#limits tr[data-prefix="email."] button:text("Clear")').click(),
    ]);
    assert.deepEqual(await server.queue.kindLimits(), []);
  });

  it('creates a schedule from its form after a refused cron is shown as a message', async () => {
    await page.goto(`${server.http}/schedules`);
    await Promise.all([page.waitForURL(`${server.http}/schedules/new`), page.click('#new-schedule')]);
    await page.selectOption('select[name="scope"]', 'tenant:acme');
    await page.fill('input[name="name"]', 'nightly');
    await page.fill('input[name="cron"]', '0 2 * *');
    await page.fill('input[name="kind"]', 'report.nightly');
    await page.fill('textarea[name="payload"]', '{"full":true}');
    await page.click('#save-schedule');
    await page.locator('.notice.error').waitFor();
    assert.match(await page.locator('.notice.error').innerText(), /^cron: /);
    assert.equal(await page.inputValue('input[name="kind"]'), 'report.nightly', 'the values as typed');
    assert.deepEqual((await server.queue.listSchedules()).schedules, [], 'nothing created');
    await page.fill('input[name="cron"]', '0 2 * * *');
    await page.fill('input[name="timezone"]', 'Europe/Berlin');
    await Promise.all([
      page.waitForURL(`${server.http}/schedules?done=created&name=nightly`),
      page.click('#save-schedule'),
    ]);
    assert.equal(await page.locator('.notice.ok').innerText(), 'Schedule nightly created.');
    const row = page.locator('tr[data-schedule="nightly"]');
    assert.match(await row.innerText(), /0 2 \* \* \* \(Europe\/Berlin\)\s+report\.nightly\s+active/);
  });

  it('edits the schedule’s job, runs it now and pauses, resumes and deletes it, asking first', async () => {
    const row = page.locator('tr[data-schedule="nightly"]');
    await Promise.all([page.waitForURL(/\/schedules\/edit\?/), row.locator('[data-action="edit"]').click()]);
    assert.equal(await page.inputValue('input[name="cron"]'), '0 2 * * *');
    await page.fill('input[name="kind"]', 'report.v2');
    await Promise.all([
      page.waitForURL(`${server.http}/schedules?done=updated&name=nightly`),
      page.click('#save-schedule'),
    ]);
    assert.equal((await server.queue.getSchedule('nightly', acme)).job.kind, 'report.v2');
    const due = (await server.queue.getSchedule('nightly', acme)).nextDueAt;

    await Promise.all([page.waitForURL(/done=ran/), row.locator('[data-action="run"]').click()]);
    assert.deepEqual(browser.asked, [confirmations[0]], 'asked before running it');
    const jobId = new URL(page.url()).searchParams.get('job') ?? '';
    assert.equal((await server.queue.show(jobId)).kind, 'report.v2');
    assert.equal((await server.queue.getSchedule('nightly', acme)).nextDueAt, due, 'its next due time stays');
    await Promise.all([
      page.waitForURL(`${server.http}/jobs/${jobId}`),
      page.click(`.notice.ok a[href="/jobs/${jobId}"]`),
    ]);
    await page.goBack();

    await Promise.all([page.waitForURL(/done=paused/), row.locator('[data-action="pause"]').click()]);
    assert.equal(await row.locator('.badge').innerText(), 'paused');
    await Promise.all([page.waitForURL(/done=resumed/), row.locator('[data-action="resume"]').click()]);
    assert.equal((await server.queue.getSchedule('nightly', acme)).paused, false);
    await Promise.all([page.waitForURL(/done=deleted/), row.locator('[data-action="delete"]').click()]);
    assert.deepEqual(browser.asked, confirmations, 'asked before deleting it');
    assert.equal(await page.locator('tr[data-schedule="nightly"]').count(), 0);
    assert.deepEqual((await server.queue.listSchedules()).schedules, []);
    assert.deepEqual(browser.dialogs, []);
    assert.deepEqual(browser.problems, []);
  });
});
