/**
 * What traces cost per job: enqueue N jobs one call at a time on the embedded queue (in memory,
 * so the store's I/O does not drown the difference) and work them with the embedded worker.
 *
 *   node --import tsx bench/traces.ts [off|on] [jobs]
 *
 * `off` registers no OpenTelemetry SDK (the api's no-op tracer: what every user without one
 * runs); `on` registers sdk-trace-base with an in-memory exporter, so every enqueue and attempt
 * is a recorded span. The figure that matters is instructions, not time (two shared cores make
 * wall clock noisy): run it under `valgrind --tool=callgrind` at two job counts and divide the
 * difference (bench/RESULTS.md, "Traces: the cost per job"). Prints the wall time too.
 */
import { performance } from 'node:perf_hooks';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { tenantScope } from '../src/core/types.ts';
import { LocalWorker } from '../src/engine/worker.ts';
import { openQueue } from '../src/open.ts';

const mode = process.argv[2] ?? 'off';
const jobs = Number(process.argv[3] ?? 2_000);
const exporter = new InMemorySpanExporter();
if (mode === 'on') {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
}

const acme = tenantScope('acme');
const queue = await openQueue({ inMemory: true });
const started = performance.now();
for (let i = 0; i < jobs; i++) await queue.enqueue({ kind: 'bench', payload: 'x' }, acme);
let left = jobs;
await new Promise<void>((resolve) => {
  if (jobs === 0) return resolve();
  const worker = new LocalWorker(queue, {
    scope: acme,
    concurrency: 8,
    handler: () => Promise.resolve(),
    onCompleted: () => {
      if (--left === 0) void worker.close().then(resolve);
    },
  }).start();
});
const ms = performance.now() - started;
await queue.close();
console.log(
  JSON.stringify({
    mode,
    jobs,
    ms: Math.round(ms),
    usPerJob: Math.round((ms * 1000) / jobs),
    spans: exporter.getFinishedSpans().length,
  }),
);
