/**
 * `npm run demo`: Telha end to end in one command. Starts a server on a
 * temporary store, enqueues a few thousand jobs, runs SDK workers with a
 * progress bar, lets some jobs fail through their retries into Dead, kills
 * one worker process mid-job so its lease is reaped and the job runs
 * elsewhere, then prints a summary and that job's lifecycle as
 * `telha jobs show` prints it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import cliProgress from 'cli-progress';
import { main as telha } from '../src/cli/program.ts';
import { JobState, PermanentError, TelhaClient, tenantScope, Worker, type JobRecord } from '../src/client/index.ts';
import { makeConfig } from '../src/core/config.ts';
import { silentLogger } from '../src/core/logger.ts';
import { openQueue } from '../src/open.ts';
import { startServer } from '../src/serve/server.ts';

const TOTAL = Number(process.env['DEMO_JOBS'] ?? 3_000);
const dir = mkdtempSync(join(tmpdir(), 'telha-demo-'));
const config = makeConfig({
  storage: { path: dir },
  // Short timings so the demo's failures, retries and reaping play out in seconds.
  jobs: { lease_ttl_secs: 2, reaper_interval_secs: 1, backoff_base_secs: 1, backoff_factor: 1, max_attempts: 3 },
  retention: { enabled: false },
  server: { address: '127.0.0.1:0', http_address: process.env['DEMO_HTTP_ADDRESS'] ?? '127.0.0.1:0' },
});
const queue = await openQueue({ config, logger: silentLogger });
const server = await startServer({ queue, config, logger: silentLogger });
const client = new TelhaClient({ address: server.address });
const acme = tenantScope('acme');
console.log(`telha serving on ${server.address}, store ${dir}`);

// 1 in 50 jobs always fails (dead after 3 attempts); 1 in 20 fails once, then succeeds.
const jobs = Array.from({ length: TOTAL }, (_, i) => ({
  kind: i % 50 === 7 ? 'email.bounce' : i % 20 === 3 ? 'email.flaky' : 'email',
  payload: JSON.stringify({ to: `user${i}@example.com` }),
}));
jobs.push({ kind: 'fragile', payload: '{"note":"the worker holding this dies"}' });
for (let i = 0; i < jobs.length; i += 1_000) await client.enqueueBatch(jobs.slice(i, i + 1_000), acme);
console.log(`enqueued ${jobs.length} jobs`);

// A worker process that takes the fragile job and dies holding it.
const doomed = spawn(
  process.execPath,
  ['--import', 'tsx', fileURLToPath(new URL('demo-doomed-worker.ts', import.meta.url)), server.address],
  {
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
const { lease_ttl_secs: ttl, reaper_interval_secs: reaper, backoff_base_secs: backoff } = config.jobs;
for await (const line of createInterface({ input: doomed.stdout })) {
  if (line.startsWith('leased ')) {
    doomed.kill('SIGKILL');
    console.log(`worker process ${doomed.pid} took ${line.slice(7)} and was killed with SIGKILL:`);
    console.log(
      `  that job waits for its lease to run out (${ttl} s, jobs.lease_ttl_secs), the reaper to take it back ` +
        `(every ${reaper} s, jobs.reaper_interval_secs) and a backoff (${backoff} s), then runs on another worker`,
    );
  }
}

const bar = new cliProgress.SingleBar(
  {
    format: '  {bar} {percentage}% | {value}/{total} finished | {rate} handler runs/s {note}',
    hideCursor: true,
    stream: process.stderr,
  },
  cliProgress.Presets.shades_classic,
);
// The rate counts handler runs over the time handlers were running, not the waits for a
// backoff or for the reaped lease, when the workers have nothing to run.
let running = 0;
let runs = 0;
let busyMs = 0;
let busySince = 0;
const busy = (): number => busyMs + (running > 0 ? performance.now() - busySince : 0);
const rate = (): number => Math.round(runs / (Math.max(busy(), 1) / 1000));
bar.start(jobs.length, 0, { rate: 0, note: '' });
let finished = 0;
let allDone!: () => void;
const done = new Promise<void>((resolve) => (allDone = resolve));
const tick = (job: { readonly kind: string }): void => {
  finished++;
  const onlyFragileLeft = finished === jobs.length - 1 && job.kind !== 'fragile';
  bar.update(finished, { rate: rate(), note: onlyFragileLeft ? "| waiting for the killed worker's lease" : '' });
  if (finished === jobs.length) allDone();
};
const seenFlaky = new Set<string>();
const started = performance.now();
const workers = Array.from({ length: 4 }, (_, w) =>
  new Worker({
    address: server.address,
    concurrency: 25,
    workerId: `demo-${w}`,
    // Handlers here fail on purpose; the summary below tells the story, not a line per failure.
    logger: silentLogger,
    handler: async (job) => {
      if (running++ === 0) busySince = performance.now();
      runs++;
      try {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 4));
        if (job.kind === 'email.bounce') {
          if (job.attempts === 2) setImmediate(() => tick(job)); // its last attempt: it goes to Dead now
          throw new Error('mailbox does not exist');
        }
        if (job.kind === 'email.flaky' && !seenFlaky.has(job.jobId)) {
          seenFlaky.add(job.jobId);
          throw new Error('SMTP timeout');
        }
        if (job.kind === 'never') throw new PermanentError('unreachable');
      } finally {
        if (--running === 0) busyMs += performance.now() - busySince;
      }
    },
    onCompleted: tick,
  }).start(),
);
await done;
bar.stop();
const seconds = (performance.now() - started) / 1000;
await Promise.all(workers.map((w) => w.close()));

const all: JobRecord[] = [];
let pageToken: string | null = null;
do {
  const page = await client.list({ scope: acme, limit: 1_000, ...(pageToken ? { pageToken } : {}) });
  all.push(...page.jobs);
  pageToken = page.nextPageToken;
} while (pageToken !== null);
const count = (f: (j: JobRecord) => boolean): number => all.filter(f).length;
console.log('');
console.log('summary');
console.log(`  completed   ${count((j) => j.state === JobState.Completed)}`);
console.log(
  `  retried     ${count((j) => j.state === JobState.Completed && j.attempts > 0)} (completed after a failure or a reaped lease)`,
);
console.log(
  `  dead        ${count((j) => j.state === JobState.Dead)} (failed all ${config.jobs.max_attempts} attempts)`,
);
console.log(
  `  reaped      ${count((j) => j.events.some((e) => e.transition === 'reaped'))} (lease of a killed worker reclaimed)`,
);
console.log(
  `  throughput  ${rate()} handler runs/s, end to end through gRPC (${runs} runs in the ${(busy() / 1000).toFixed(1)} s ` +
    `handlers were running; ${seconds.toFixed(1)} s in all, the rest waiting for backoff and the reaped lease)`,
);
const fragile = all.find((j) => j.kind === 'fragile');
if (fragile) {
  // The CLI itself, in this process, while the demo's server still runs (it and its store go when the demo ends).
  console.log(`\nthe job whose worker died:\n$ telha jobs show ${fragile.jobId} --address ${server.address}`);
  await telha(['jobs', 'show', fragile.jobId, '--address', server.address]);
}

await server.close();
await queue.close();
rmSync(dir, { recursive: true, force: true });
