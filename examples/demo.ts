/**
 * `npm run demo`: Telha end to end in one command. Starts a server on a
 * temporary store, enqueues a few thousand jobs, runs SDK workers with a
 * progress bar, lets some jobs fail through their retries into Dead, kills
 * one worker process mid-job so its lease is reaped and the job runs
 * elsewhere, then prints a summary.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import cliProgress from 'cli-progress';
import { JobState, PermanentError, TelhaClient, tenantScope, Worker, type JobRecord } from '../src/client/index.ts';
import { makeConfig } from '../src/core/config.ts';
import { silentLogger } from '../src/core/logger.ts';
import { openQueue } from '../src/open.ts';
import { startServer } from '../src/server/server.ts';

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
const started = performance.now();
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
for await (const line of createInterface({ input: doomed.stdout })) {
  if (line.startsWith('leased ')) {
    doomed.kill('SIGKILL');
    console.log(`worker process ${doomed.pid} took ${line.slice(7)} and was killed with SIGKILL`);
  }
}

const bar = new cliProgress.SingleBar(
  {
    format: '  {bar} {percentage}% | {value}/{total} finished | {rate} jobs/s',
    hideCursor: true,
    stream: process.stderr,
  },
  cliProgress.Presets.shades_classic,
);
bar.start(jobs.length, 0, { rate: 0 });
let finished = 0;
let allDone!: () => void;
const done = new Promise<void>((resolve) => (allDone = resolve));
const tick = (): void => {
  finished++;
  bar.update(finished, { rate: Math.round(finished / ((performance.now() - started) / 1000)) });
  if (finished === jobs.length) allDone();
};
const seenFlaky = new Set<string>();
const workers = Array.from({ length: 4 }, (_, w) =>
  new Worker({
    address: server.address,
    concurrency: 25,
    workerId: `demo-${w}`,
    // Handlers here fail on purpose; the summary below tells the story, not a line per failure.
    logger: silentLogger,
    handler: async (job) => {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 4));
      if (job.kind === 'email.bounce') {
        if (job.attempts === 2) setImmediate(tick); // its last attempt: it goes to Dead now
        throw new Error('mailbox does not exist');
      }
      if (job.kind === 'email.flaky' && !seenFlaky.has(job.id)) {
        seenFlaky.add(job.id);
        throw new Error('SMTP timeout');
      }
      if (job.kind === 'never') throw new PermanentError('unreachable');
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
  `  throughput  ${Math.round(all.length / seconds)} jobs/s over ${seconds.toFixed(1)} s, end to end through gRPC`,
);
const fragile = all.find((j) => j.kind === 'fragile');
if (fragile) {
  console.log(`\nlifecycle of the job whose worker died (telha jobs show ${fragile.jobId}):`);
  for (const e of fragile.events)
    console.log(`  ${new Date(e.at / 1000).toISOString().slice(11, 23)}  ${e.transition.padEnd(9)} ${e.detail ?? ''}`);
}

await server.close();
await queue.close();
rmSync(dir, { recursive: true, force: true });
