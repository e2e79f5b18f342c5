/**
 * The dashboard with something to show: a server on a temporary store, SDK
 * workers draining a wave of jobs from three tenants, some failing into
 * Dead, one lease left to expire and be reaped, and one job walked through
 * a long life (heartbeats, a checkpoint, a reaped lease, a failure, a retry
 * and a completion with a chained successor).
 *
 *     npm run demo:dashboard               keep serving; open the printed address
 *     npm run screenshots                  write docs/img/dashboard-*.png with Chromium, then stop
 *
 * Env: DEMO_SECONDS (traffic, default 60), DEMO_HTTP_ADDRESS (the dashboard's address, default
 * a free port on 127.0.0.1), TELHA_CHROMIUM (default /usr/bin/chromium). It prints a few lines,
 * the dashboard's address last; the workers log nothing.
 */
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchChromium } from '../test/support/chromium.ts';
import { PermanentError, TelhaClient, tenantScope, Worker } from '../src/client/index.ts';
import { makeConfig } from '../src/core/config.ts';
import { silentLogger } from '../src/core/logger.ts';
import { openQueue } from '../src/open.ts';
import { startServer } from '../src/serve/server.ts';

const SECONDS = Number(process.env['DEMO_SECONDS'] ?? 60);
const shotsAt = process.argv.indexOf('--screenshots');
const shots = shotsAt === -1 ? null : (process.argv[shotsAt + 1] ?? 'docs/img');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const dir = mkdtempSync(join(tmpdir(), 'telha-dashboard-demo-'));
const config = makeConfig({
  storage: { path: dir },
  // Short timings so reaping and retries play out in seconds; a sample every second for the charts.
  jobs: { lease_ttl_secs: 2, reaper_interval_secs: 1, backoff_base_secs: 1, backoff_factor: 1, max_attempts: 3 },
  retention: { enabled: false },
  server: { address: '127.0.0.1:0', http_address: process.env['DEMO_HTTP_ADDRESS'] ?? '127.0.0.1:0' },
  metrics: { refresh_ms: 1_000 },
});
const queue = await openQueue({ config, logger: silentLogger });
const server = await startServer({ queue, config, logger: silentLogger });
const dashboard = `http://${server.http?.address ?? ''}`;
const client = new TelhaClient({ address: server.address });
const tenants = ['acme', 'globex', 'initech'].map(tenantScope);
console.log(`sending ${SECONDS} s of traffic; the dashboard's address follows when it is done`);

// The controls' panels and pages with something in them: a pause, kind limits and schedules.
await client.pause('webhook.', tenantScope('globex'));
await client.setKindLimit('image.', { concurrency: 4, rate: '50/1s' });
await client.setKindLimit('report.', { concurrency: 2 });
await client.createSchedule(
  { name: 'nightly-report', cron: '0 2 * * *', timezone: 'Europe/Berlin', job: { kind: 'report.daily' } },
  tenantScope('acme'),
);
await client.createSchedule(
  { name: 'hourly-digest', everySecs: 3_600, job: { kind: 'email.digest', payload: '{"since":"1h"}' } },
  tenantScope('globex'),
);
await client.createSchedule(
  { name: 'weekly-cleanup', cron: '30 4 * * 0', job: { kind: 'image.cleanup' }, paused: true },
  tenantScope('initech'),
);

// One job's long life, step by step through the engine, for the timeline.
async function longLife(): Promise<string> {
  const acme = tenantScope('acme');
  const { job } = await queue.enqueue(
    {
      kind: 'invoice.render',
      payload: JSON.stringify({ invoice: 'INV-2026-0117', pages: 14 }),
      idempotencyKey: 'inv-0117',
    },
    acme,
  );
  const first = await queue.leaseNext({ workerId: 'render-a', kinds: ['invoice.'], scope: acme });
  if (first === null) throw new Error('expected to lease the invoice');
  const fenceA = { workerId: 'render-a', leaseGeneration: first.leaseGeneration };
  for (let i = 0; i < 3; i++) await queue.heartbeat(job.jobId, fenceA);
  await queue.checkpoint(job.jobId, fenceA, Buffer.from('{"page":6}'));
  // render-a goes silent: its lease expires and the reaper hands the job on.
  while ((await queue.show(job.jobId)).state !== 0) await sleep(200);
  let second = null;
  while (second === null) {
    second = await queue.leaseNext({ workerId: 'render-b', kinds: ['invoice.'], scope: acme });
    if (second === null) await sleep(200);
  }
  const fenceB = { workerId: 'render-b', leaseGeneration: second.leaseGeneration };
  await queue.heartbeat(job.jobId, fenceB);
  // The stale worker wakes up and tries to finish: refused.
  await queue.complete(job.jobId, fenceA).catch(() => undefined);
  await queue.fail(job.jobId, fenceB, { error: 'font cache corrupted: /var/cache/fonts/noto.bin (EIO)' });
  let third = null;
  while (third === null) {
    third = await queue.leaseNext({ workerId: 'render-c', kinds: ['invoice.'], scope: acme });
    if (third === null) await sleep(200);
  }
  await queue.complete(
    job.jobId,
    { workerId: 'render-c', leaseGeneration: third.leaseGeneration },
    { successors: [{ kind: 'email.invoice', payload: '{"invoice":"INV-2026-0117"}' }] },
  );
  return job.jobId;
}
const life = longLife();

// A wave of traffic: kinds with their own failure habits, three tenants.
const seen = new Set<string>();
const workers = ['fleet-1', 'fleet-2', 'fleet-3'].map((workerId) =>
  new Worker({
    address: server.address,
    workerId,
    // Quiet: its failures are the demo's point, and they are on the dashboard.
    logger: silentLogger,
    concurrency: 8,
    kinds: ['email.', 'report.', 'image.', 'webhook.'],
    handler: async (job) => {
      await sleep(5 + Math.random() * 40);
      if (job.kind === 'webhook.deliver' && Math.random() < 0.3)
        throw new Error('HTTP 503 from https://hooks.example.com/orders');
      if (job.kind === 'email.bounce') throw new PermanentError('550 5.1.1 mailbox does not exist');
      if (job.kind === 'report.daily' && !seen.has(job.jobId)) {
        seen.add(job.jobId);
        throw new Error('warehouse query timed out after 30 s');
      }
    },
  }).start(),
);
const kinds = [
  'email.welcome',
  'email.welcome',
  'email.receipt',
  'report.daily',
  'image.resize',
  'image.resize',
  'webhook.deliver',
  'email.bounce',
];
const started = Date.now();
let sent = 0;
while (Date.now() - started < SECONDS * 1000) {
  const t = (Date.now() - started) / 1000;
  const rate = 40 + 30 * Math.sin(t / 6) + (t > SECONDS * 0.6 ? 40 : 0);
  const batch = Array.from({ length: Math.max(1, Math.round(rate / 4)) }, (_, i) => ({
    kind: kinds[(sent + i) % kinds.length] as string,
    payload: JSON.stringify({ n: sent + i, to: `user${sent + i}@example.com` }),
  }));
  await client.enqueueBatch(batch, tenants[sent % tenants.length]);
  sent += batch.length;
  await sleep(250);
}
const lifeId = await life;
console.log(`enqueued ${sent} jobs; the long-lived job is ${dashboard}/jobs/${lifeId}`);

if (shots !== null) {
  mkdirSync(shots, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'telha-chromium-'));
  const context = await launchChromium(profile, { viewport: { width: 1360, height: 900 }, deviceScaleFactor: 1 });
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(`${dashboard}/`);
  await page.locator('#live[data-state="live"]').waitFor();
  await page.waitForSelector('#chart-throughput canvas');
  await page.screenshot({ path: join(shots, 'dashboard-overview.png'), fullPage: true });
  await page.goto(`${dashboard}/jobs/${lifeId}`);
  await page.screenshot({ path: join(shots, 'dashboard-job.png'), fullPage: true });
  // The lists an operator works from: Dead rows with their last error, a refused filter's message, live leases.
  await page.goto(`${dashboard}/jobs?state=dead`);
  await page.screenshot({ path: join(shots, 'dashboard-dead-list.png'), fullPage: false });
  await page.fill('input[name="kind"]', 'email welcome');
  await page.press('input[name="kind"]', 'Enter');
  await page.locator('#results .notice.error').waitFor();
  await page.screenshot({ path: join(shots, 'dashboard-refused-filter.png'), fullPage: false });
  await page.goto(`${dashboard}/leases`);
  await page.locator('#live[data-state="live"]').waitFor();
  await page.screenshot({ path: join(shots, 'dashboard-leases.png'), fullPage: false });
  // The controls: pause and limits on the overview (and a refused limit), schedules and their form.
  await page.goto(`${dashboard}/#pauses`);
  await page.screenshot({ path: join(shots, 'dashboard-pauses-limits.png'), fullPage: false });
  await page.locator('#limits tr[data-prefix="image."] input[name="rate"]').fill('fast');
  await page.locator('#limits tr[data-prefix="image."] button:text("Save")').click();
  await page.locator('#limits .notice.error').waitFor();
  await page.locator('#limits').screenshot({ path: join(shots, 'dashboard-limit-refused.png') });
  await page.goto(`${dashboard}/schedules`);
  page.once('dialog', (dialog) => void dialog.accept());
  await page.locator('tr[data-schedule="hourly-digest"] [data-action="run"]').click();
  await page.waitForURL(/done=ran/);
  await page.screenshot({ path: join(shots, 'dashboard-schedules.png'), fullPage: false });
  await page.goto(`${dashboard}/schedules/new`);
  await page.fill('input[name="name"]', 'month-end');
  await page.fill('input[name="cron"]', '0 0 L * * *');
  await page.fill('input[name="kind"]', 'report.month');
  await page.fill('textarea[name="payload"]', '{"close":"books"}');
  await page.click('#save-schedule');
  await page.locator('.notice.error').waitFor();
  await page.screenshot({ path: join(shots, 'dashboard-schedule-form.png'), fullPage: false });
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  console.log(`screenshots in ${shots}/`);
} else {
  console.log(`dashboard on ${dashboard}/  (gRPC on ${server.address}): serving until Ctrl-C`);
  await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
}

await Promise.all(workers.map((w) => w.close()));
client.close();
await server.close();
await queue.close();
rmSync(dir, { recursive: true, force: true });
