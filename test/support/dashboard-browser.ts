/**
 * The dashboard in Chromium as the browser tests drive it: a fresh profile, the dashboard's own
 * confirmations answered yes (and recorded), any other dialog counted as hostile content that
 * ran, and page errors and console errors collected, for each test file to assert empty.
 */
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { tempDir } from './backends.ts';
import { CHROMIUM, launchChromium } from './chromium.ts';

export interface DashboardBrowser {
  readonly page: Page;
  /** The confirmations the dashboard asked (and were accepted), in order. */
  readonly asked: string[];
  /** Every other dialog's message: content that ran and should not have. */
  readonly dialogs: string[];
  /** Page errors and console errors (but the refusals allowed by `allowRefusals`). */
  readonly problems: string[];
  /** Close Chromium and remove its profile. */
  close(): Promise<void>;
}

export interface DashboardBrowserOptions {
  /** The questions the dashboard asks before an action, answered yes; any other dialog is dismissed and counted. */
  readonly confirmations?: readonly string[];
  /**
   * Whether the page's console errors for a 400 or 404 answer are expected (a refused form or
   * filter, a job id that opens none, each shown on the page): they are then not problems.
   */
  readonly allowRefusals?: boolean;
}

/** A headless Chromium with one page, its dialogs and errors watched. */
export async function openDashboardBrowser(options: DashboardBrowserOptions = {}): Promise<DashboardBrowser> {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  const confirmations = options.confirmations ?? [];
  const profile = tempDir('telha-chromium-');
  const context = await launchChromium(profile);
  const page = context.pages()[0] ?? (await context.newPage());
  const asked: string[] = [];
  const dialogs: string[] = [];
  const problems: string[] = [];
  page.on('dialog', (dialog) => {
    // The dashboard's own confirmations are answered yes (and checked where they are asked);
    // any other dialog is hostile content that ran, and is counted.
    if (dialog.type() === 'confirm' && confirmations.includes(dialog.message())) {
      asked.push(dialog.message());
      void dialog.accept();
      return;
    }
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    if (options.allowRefusals === true && /status of 40[04]/.test(message.text())) return;
    problems.push(`console: ${message.text()}`);
  });
  return {
    page,
    asked,
    dialogs,
    problems,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Submit `token` on the login page `page` shows, and wait for the overview. */
export async function submitToken(page: Page, http: string, token: string): Promise<void> {
  await page.fill('input[name="token"]', token);
  await Promise.all([page.waitForURL(`${http}/`), page.click('button[type="submit"]')]);
}

/** Log in as `token` from the login page. */
export async function logIn(page: Page, http: string, token: string): Promise<void> {
  await page.goto(`${http}/login`);
  await submitToken(page, http, token);
}
