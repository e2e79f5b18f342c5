/**
 * One fixed workload for `bench/instructions.ts`, run under callgrind started with its
 * instrumentation off: after the warm-up it turns callgrind's counting on (`callgrind_control
 * -i on`) in itself and in the processes named by BENCH_INSTRUCTIONS_PIDS (the server), runs
 * the measured jobs, and turns it off again, so only the jobs are counted.
 *
 *   embedded <warm-up> <jobs>               enqueue → lease → complete, one job at a time, in-process
 *   traced <warm-up> <jobs>                 the same with an OpenTelemetry SDK recording every span
 *                                           (sdk-trace-base, an in-memory exporter): what traces cost
 *   single <address> <warm-up> <jobs>       awaited single enqueues through `telha serve` (the SDK's Produce stream)
 *   drain <address> <warm-up> <jobs> <c>    jobs enqueued in batches of 100, then drained by one SDK Worker at c
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { makeConfig, openQueue } from 'telha';
import { TelhaClient, Worker, tenantScope } from 'telha/client';

const scope = tenantScope('bench');
/** Under callgrind a call can take seconds: no deadline the workload could hit. */
const timeoutMs = 3_600_000;
const [mode, ...args] = process.argv.slice(2);
const counted = [
  String(process.pid),
  ...(process.env['BENCH_INSTRUCTIONS_PIDS'] ?? '').split(',').filter((pid) => pid !== ''),
];

/** Turn callgrind's instrumentation on or off in every counted process (this one last on, first off). */
async function counting(on: boolean): Promise<void> {
  const pids = on ? [...counted].reverse() : counted;
  for (const pid of pids) await promisify(execFile)('callgrind_control', ['-i', on ? 'on' : 'off', pid]);
}

async function embedded(warmUp: number, jobs: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'telha-instructions-'));
  const queue = await openQueue({
    config: makeConfig({ storage: { path: dir }, retention: { enabled: false } }),
    services: false,
  });
  const cycle = async (): Promise<void> => {
    await queue.enqueue({ kind: 'k' }, scope);
    const job = await queue.leaseNext({ workerId: 'w', scope });
    if (job === null) throw new Error('the job just enqueued was not leased');
    await queue.complete(job.jobId, { workerId: 'w', leaseGeneration: job.leaseGeneration });
  };
  for (let i = 0; i < warmUp; i++) await cycle();
  await counting(true);
  for (let i = 0; i < jobs; i++) await cycle();
  await counting(false);
  await queue.close();
  rmSync(dir, { recursive: true, force: true });
}

async function single(address: string, warmUp: number, jobs: number): Promise<void> {
  const client = new TelhaClient({ address, timeoutMs });
  for (let i = 0; i < warmUp; i++) await client.enqueue({ kind: 'single' }, scope);
  await counting(true);
  for (let i = 0; i < jobs; i++) await client.enqueue({ kind: 'single' }, scope);
  await counting(false);
  client.close();
}

async function drainOnce(
  address: string,
  jobs: number,
  concurrency: number,
  kind: string,
  count = false,
): Promise<void> {
  if (count) await counting(true);
  const producer = new TelhaClient({ address, timeoutMs });
  for (let i = 0; i < jobs; i += 100) {
    await producer.enqueueBatch(
      Array.from({ length: Math.min(100, jobs - i) }, () => ({ kind })),
      scope,
    );
  }
  producer.close();
  let completed = 0;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const worker = new Worker({
    address,
    concurrency,
    kinds: [kind],
    handler: () => Promise.resolve(),
    onCompleted: () => {
      if (++completed === jobs) finish();
    },
  }).start();
  await done;
  if (count) await counting(false);
  await worker.close();
}

const number = (at: number): number => {
  const value = Number(args[at]);
  if (!Number.isInteger(value) || value < 0) throw new Error(`argument ${at + 2} must be a count, got ${args[at]}`);
  return value;
};

switch (mode ?? '') {
  case 'embedded':
    await embedded(number(0), number(1));
    break;
  case 'traced': {
    const exporter = new InMemorySpanExporter();
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    // Finished spans pile up in the exporter: emptied every 50 ms, as an exporter sending them would.
    const emptying = setInterval(() => exporter.reset(), 50);
    await embedded(number(0), number(1));
    clearInterval(emptying);
    break;
  }
  case 'single':
    await single(args[0] ?? '', number(1), number(2));
    break;
  case 'drain':
    await drainOnce(args[0] ?? '', number(1), number(3), 'warm');
    await drainOnce(args[0] ?? '', number(2), number(3), 'measured', true);
    break;
  default:
    throw new Error(`unknown workload ${mode ?? '(none)'}: embedded, traced, single or drain`);
}
