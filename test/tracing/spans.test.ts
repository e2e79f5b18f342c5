/**
 * Traces: with an OpenTelemetry SDK registered, a job is one trace from its enqueue to its
 * attempts, across real processes (a producer, `telha serve`, a worker), and in one process
 * (the embedded queue and worker). This process's spans go to an in-memory exporter; the child
 * processes' to files (test/support/otel-spans.mjs).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { TelhaClient } from '../../src/client/client.ts';
import { tenantScope } from '../../src/core/types.ts';
import { LocalWorker } from '../../src/engine/worker.ts';
import { openQueue } from '../../src/open.ts';
import { makeConfig } from '../../src/core/config.ts';
import { tempDir } from '../support/backends.ts';
import { freePort, spawnServer, type ServerProcess } from '../support/server.ts';

const exporter = new InMemorySpanExporter();
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

const acme = tenantScope('acme');
const SPANS_SETUP = fileURLToPath(new URL('../support/otel-spans.mjs', import.meta.url));
const WORKER_CHILD = fileURLToPath(new URL('../support/traced-worker-child.ts', import.meta.url));

/** A span as the child processes write it. */
interface SpanLine {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  links: { traceId: string; spanId: string }[];
  attributes: Record<string, unknown>;
  status: number;
}

function spansIn(file: string): SpanLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as SpanLine);
}

function producerSpan(jobId: string): ReadableSpan {
  const span = exporter.getFinishedSpans().find((s) => s.attributes['messaging.message.id'] === jobId);
  assert.ok(span, `no enqueue span for job ${jobId}`);
  return span;
}

describe('traces across processes', () => {
  const dir = tempDir('telha-traces-');
  const serverSpans = join(dir, 'server-spans.jsonl');
  const workerSpans = join(dir, 'worker-spans.jsonl');
  let server: ServerProcess;
  let client: TelhaClient;
  let worker: ReturnType<typeof spawn>;
  const completed = new Map<string, () => void>();
  /** Resolves when the worker process prints that it completed `jobId`. */
  const completion = (jobId: string): Promise<void> => new Promise((resolve) => completed.set(jobId, resolve));

  before(async () => {
    const otel = { NODE_OPTIONS: `--import ${SPANS_SETUP}` };
    server = await spawnServer(join(dir, 'store'), await freePort(), {
      ...otel,
      TELHA_TEST_SPANS_FILE: serverSpans,
      TELHA_JOBS__BACKOFF_BASE_SECS: '0',
    });
    client = new TelhaClient({ address: server.address });
    worker = spawn(process.execPath, ['--import', 'tsx', WORKER_CHILD, server.address, 'traced'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...otel, TELHA_TEST_SPANS_FILE: workerSpans },
    });
    createInterface({ input: worker.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const [word, jobId] = line.split(' ');
      if (word === 'completed' && jobId !== undefined) completed.get(jobId)?.();
    });
  });

  after(async () => {
    worker.kill('SIGTERM');
    client.close();
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('makes one trace of a job enqueued here, handled by telha serve and worked in a worker process', async () => {
    const { job } = await client.enqueue({ kind: 'traced', payload: 'once' }, acme);
    await completion(job.jobId);
    const enqueue = producerSpan(job.jobId);
    const { traceId, spanId } = enqueue.spanContext();
    assert.equal(enqueue.kind, SpanKind.PRODUCER);
    assert.equal(enqueue.attributes['messaging.system'], 'telha');
    assert.equal(enqueue.attributes['messaging.destination.name'], 'traced');
    assert.equal(job.traceContext?.traceparent, `00-${traceId}-${spanId}-01`);

    const handling = spansIn(serverSpans).find((s) => s.kind === SpanKind.SERVER && s.parentSpanId === spanId);
    assert.ok(handling, 'no server span under the enqueue span');
    assert.equal(handling.traceId, traceId);
    assert.equal(handling.name, 'telha.v1.Queue/Enqueue');

    const attempts = spansIn(workerSpans).filter((s) => s.attributes['messaging.message.id'] === job.jobId);
    assert.equal(attempts.length, 1);
    const [attempt] = attempts as [SpanLine];
    assert.equal(attempt.kind, SpanKind.CONSUMER);
    assert.equal(attempt.traceId, traceId);
    assert.equal(attempt.parentSpanId, spanId);
    assert.deepEqual(attempt.links, [{ traceId, spanId }]);
    assert.equal(attempt.attributes['telha.job.attempt'], 1);
    assert.equal(attempt.attributes['telha.job.outcome'], 'completed');
  });

  it('makes each attempt of a retried job a span of the same trace, linked to the enqueue span', async () => {
    const { job } = await client.enqueue({ kind: 'traced', payload: 'fail-once' }, acme);
    await completion(job.jobId);
    const { traceId, spanId } = producerSpan(job.jobId).spanContext();
    const attempts = spansIn(workerSpans)
      .filter((s) => s.attributes['messaging.message.id'] === job.jobId)
      .sort((a, b) => Number(a.attributes['telha.job.attempt']) - Number(b.attributes['telha.job.attempt']));
    assert.deepEqual(
      attempts.map((s) => [s.attributes['telha.job.attempt'], s.attributes['telha.job.outcome']]),
      [
        [1, 'failed'],
        [2, 'completed'],
      ],
    );
    for (const attempt of attempts) {
      assert.equal(attempt.traceId, traceId);
      assert.equal(attempt.parentSpanId, spanId);
      assert.deepEqual(attempt.links, [{ traceId, spanId }]);
    }
    assert.notEqual(attempts[0]?.spanId, attempts[1]?.spanId);
  });
});

describe('traces in one process', () => {
  it('makes the embedded worker’s attempt and its chained successor’s children of the embedded enqueue', async () => {
    const dir = tempDir('telha-traces-embedded-');
    const queue = await openQueue({ config: makeConfig({ storage: { path: dir } }) });
    try {
      const parent = trace.getTracer('test').startSpan('request');
      const { job } = await context.with(trace.setSpan(context.active(), parent), () =>
        queue.enqueue({ kind: 'first' }, acme),
      );
      parent.end();
      const done = new Map<string, () => void>();
      const finished = (kind: string) => new Promise<void>((resolve) => done.set(kind, resolve));
      const first = finished('first');
      const next = finished('next');
      const worker = new LocalWorker(queue, {
        scope: acme,
        handler: (running) => {
          if (running.kind === 'first') running.chain({ kind: 'next' });
          return Promise.resolve();
        },
        onCompleted: (record) => done.get(record.kind)?.(),
      }).start();
      await Promise.all([first, next]);
      await worker.close();

      const spans = exporter.getFinishedSpans();
      const enqueue = producerSpan(job.jobId);
      assert.equal(enqueue.parentSpanContext?.spanId, parent.spanContext().spanId);
      const attempt = spans.find((s) => s.name === 'process first');
      const successor = spans.find((s) => s.name === 'process next');
      assert.ok(attempt && successor);
      assert.equal(attempt.parentSpanContext?.spanId, enqueue.spanContext().spanId);
      // The successor was enqueued by the first job's attempt: its attempt continues that trace.
      assert.equal(successor.spanContext().traceId, parent.spanContext().traceId);
      assert.equal(successor.parentSpanContext?.spanId, attempt.spanContext().spanId);
    } finally {
      await queue.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
