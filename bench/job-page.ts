/**
 * Job page benchmark: prints numbers, never asserts on them.
 *
 * What a tenant's small but hostile values cost the dashboard: an 8,000-byte payload of arrays
 * nested 4,000 deep, and a 4,000-character progress report nested 2,000 deep, each read as a job
 * page over a real socket. Printed: the page's size, the median time to fetch it, and the
 * process's RSS before and after eight views of the payload's page at once.
 *
 * Run: npm run bench:job-page
 *
 * Environment:
 *  BENCH_ROUNDS=20   page views timed per value
 */
import { performance } from 'node:perf_hooks';
import { makeConfig } from '../src/core/config.ts';
import { silentLogger } from '../src/core/logger.ts';
import { tenantScope } from '../src/core/types.ts';
import { openQueue } from '../src/open.ts';
import { startServer } from '../src/serve/server.ts';
import { envNumber, fmt, formatTable, median } from './support.ts';

const ROUNDS = Math.round(envNumber('BENCH_ROUNDS', 20));
const MIB = 1024 * 1024;
const acme = tenantScope('acme');

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

const queue = await openQueue({ inMemory: true, services: false });
const config = makeConfig({ server: { address: '127.0.0.1:0', http_address: '127.0.0.1:0' } });
const running = await startServer({ queue, config, logger: silentLogger });
try {
  const base = `http://${running.http?.address ?? ''}`;
  const { job: payloadJob } = await queue.enqueue({ kind: 'bench.payload', payload: nested(4_000) }, acme);
  const { job: progressJob } = await queue.enqueue({ kind: 'bench.progress' }, acme);
  const leased = await queue.leaseNext({ workerId: 'bench', kinds: ['bench.progress'] });
  if (leased === null) throw new Error('the progress job was not leased');
  await queue.heartbeat(
    progressJob.jobId,
    { workerId: 'bench', leaseGeneration: leased.leaseGeneration },
    { progress: nested(2_000) },
  );

  // Without tokens every caller is an operator; the first answer sets the session cookie.
  const first = await fetch(`${base}/`);
  const cookie = /^[^;]+/.exec(first.headers.get('set-cookie') ?? '')?.[0] ?? '';
  await first.text();
  const view = async (jobId: string): Promise<{ bytes: number; ms: number }> => {
    const started = performance.now();
    const response = await fetch(`${base}/jobs/${jobId}`, { headers: { cookie } });
    const bytes = (await response.arrayBuffer()).byteLength;
    return { bytes, ms: performance.now() - started };
  };

  const rows: string[][] = [];
  for (const [label, jobId] of [
    ['payload 8,000 B nested 4,000 deep', payloadJob.jobId],
    ['progress 4,000 chars nested 2,000 deep', progressJob.jobId],
  ] as const) {
    const runs = [];
    for (let i = 0; i < ROUNDS; i++) runs.push(await view(jobId));
    rows.push([label, fmt(runs[0]?.bytes ?? NaN), fmt(median(runs.map((r) => r.ms)), 1)]);
  }
  console.log(formatTable(['job page', 'page bytes', 'median ms'], rows));

  const before = process.memoryUsage().rss;
  await Promise.all(Array.from({ length: 8 }, () => view(payloadJob.jobId)));
  const after = process.memoryUsage().rss;
  console.log(`\n  eight views of the payload's page at once: RSS ${fmt(before / MIB)} -> ${fmt(after / MIB)} MiB`);
} finally {
  await running.close();
  await queue.close();
}
