/**
 * What Watch streams that never read cost `telha serve`: the server in a
 * child process (RocksDB) with a bounded heap (`--max-old-space-size`),
 * BENCH_WATCHERS raw @grpc/grpc-js Watch calls on one scope that are opened
 * and then never read (the call stream stays paused, so HTTP/2 flow control
 * closes their windows), and BENCH_JOBS single enqueues into that scope from
 * a few producers (each with a few calls in flight, which the SDK sends
 * together) while another caller asks for Counts in a loop.
 *
 * Reports the server's resident memory before the enqueues and at its peak
 * (`/proc/<pid>/status`: VmRSS, VmHWM), Enqueue and Counts latency, how many
 * watches the server refused (`watch.max_streams_per_principal`), and whether
 * the server survived.
 *
 * Env: BENCH_WATCHERS (500), BENCH_JOBS (20000), BENCH_PRODUCERS (4), BENCH_IN_FLIGHT (25), BENCH_HEAP_MB (768),
 * BENCH_CONNECTIONS (10: the watchers' HTTP/2 connections), BENCH_TENANT (0; 1: every caller uses
 * one tenant token), BENCH_MAX_STREAMS (unset: the server's default `watch.max_streams_per_principal`).
 * Prints numbers only; nothing here asserts on time.
 */
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-call --
   proto-loader builds the raw client from the .proto file at run time: untyped by design. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { TelhaClient, tenantScope } from 'telha/client';
import { envNumber, fmt, percentile, settlesWithin, sleep, startServer } from './support.ts';

const WATCHERS = envNumber('BENCH_WATCHERS', 500);
const JOBS = envNumber('BENCH_JOBS', 20_000);
const PRODUCERS = envNumber('BENCH_PRODUCERS', 4);
/** Enqueue calls each producer has in flight: the SDK sends those of one turn as one EnqueueEach. */
const IN_FLIGHT = Math.max(1, envNumber('BENCH_IN_FLIGHT', 25));
const HEAP_MB = envNumber('BENCH_HEAP_MB', 768);
const CONNECTIONS = Math.max(1, envNumber('BENCH_CONNECTIONS', 10));
const TENANT = process.env['BENCH_TENANT'] === '1';
const MAX_STREAMS = process.env['BENCH_MAX_STREAMS'] ?? '';
const TOKEN = 'bench-tenant-token-0123456789';
const scope = tenantScope('bench');

/** Resident and peak resident memory of a process, in MiB; null once it is gone. */
function memoryOf(pid: number): { rss: number; hwm: number } | null {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'latin1');
  } catch {
    return null;
  }
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kib('VmRSS') / 1024, hwm: kib('VmHWM') / 1024 };
}

const dir = mkdtempSync(join(tmpdir(), 'telha-bench-unread-'));
const env: Record<string, string> = {};
if (MAX_STREAMS !== '') env['TELHA_WATCH__MAX_STREAMS_PER_PRINCIPAL'] = MAX_STREAMS;
if (TENANT) {
  const config = join(dir, 'telha.toml');
  writeFileSync(config, `[[server.tokens]]\ntoken = "${TOKEN}"\nrole = "tenant"\ntenant = "bench"\n`);
  env['TELHA_CONFIG'] = config;
}
const server = await startServer(join(dir, 'data'), env, 60_000, [`--max-old-space-size=${HEAP_MB}`]);
let crashed: string | null = null;
void server.exited.then((how) => (crashed = how));
const metadata = new grpc.Metadata();
if (TENANT) metadata.set('authorization', `Bearer ${TOKEN}`);

// Loaded from the .proto at run time, as any gRPC client could: no SDK between the watch and the server.
const protoFile = fileURLToPath(new URL('../proto/telha/v1/queue.proto', import.meta.url));
const definition = protoLoader.loadSync(protoFile, { keepCase: true });
const proto = grpc.loadPackageDefinition(definition) as any;
const stubs = Array.from(
  { length: CONNECTIONS },
  () =>
    new proto.telha.v1.QueueService(server.address, grpc.credentials.createInsecure(), {
      'grpc.use_local_subchannel_pool': 1,
    }) as grpc.Client,
);
const clientOptions = { address: server.address, produceStream: false, ...(TENANT ? { token: TOKEN } : {}) };
const producers = Array.from({ length: PRODUCERS }, () => new TelhaClient(clientOptions));
const reader = new TelhaClient(clientOptions);
const calls: grpc.ClientReadableStream<unknown>[] = [];
try {
  await reader.waitForReady();
  const atStart = memoryOf(server.pid);

  // Each watcher takes its first message (the open, with its token) and then never reads again.
  let refused = 0;
  const opened = await Promise.all(
    Array.from({ length: WATCHERS }, (_, i) => {
      const stub = stubs[i % CONNECTIONS] as any;
      const call: grpc.ClientReadableStream<unknown> = stub.Watch(
        TENANT ? {} : { scope: { tenant: 'bench' } },
        metadata,
      );
      calls.push(call);
      return new Promise<boolean>((resolve) => {
        call.once('data', () => {
          call.pause();
          resolve(true);
        });
        call.once('error', (error: grpc.ServiceError) => {
          if (error.code === grpc.status.RESOURCE_EXHAUSTED) refused++;
          resolve(false);
        });
      });
    }),
  );
  const open = opened.filter(Boolean).length;
  const before = memoryOf(server.pid);

  const enqueueMs: number[] = [];
  const countsMs: number[] = [];
  let peak = before?.rss ?? NaN;
  let sent = 0;
  const done = new AbortController();
  const sampling = (async () => {
    while (!done.signal.aborted && crashed === null) {
      // NaN once the process has exited and is not yet reaped (its status has no VmRSS).
      const rss = memoryOf(server.pid)?.rss ?? NaN;
      if (Number.isFinite(rss)) peak = Math.max(peak, rss);
      await sleep(100);
    }
  })();
  const counting = (async () => {
    while (!done.signal.aborted && crashed === null) {
      const started = performance.now();
      try {
        await reader.counts(scope);
        countsMs.push(performance.now() - started);
      } catch {
        break;
      }
    }
  })();
  const started = performance.now();
  const enqueue = async (producer: TelhaClient): Promise<void> => {
    const at = performance.now();
    await producer.enqueue({ kind: 'unread' }, scope);
    enqueueMs.push(performance.now() - at);
  };
  await Promise.all(
    producers.map(async (producer) => {
      while (sent < JOBS && crashed === null) {
        const chunk = Math.min(IN_FLIGHT, JOBS - sent);
        sent += chunk;
        const outcomes = await Promise.allSettled(Array.from({ length: chunk }, () => enqueue(producer)));
        if (outcomes.some((outcome) => outcome.status === 'rejected')) break;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  // Enqueues stopped short: the server is going down, or refused them; tell which.
  if (enqueueMs.length < JOBS) await settlesWithin(server.exited, 10_000);
  done.abort();
  await Promise.all([sampling, counting]);
  const after = memoryOf(server.pid);
  enqueueMs.sort((a, b) => a - b);
  countsMs.sort((a, b) => a - b);
  const ms = (values: number[], q: number): string => fmt(percentile(values, q), 1);
  console.log(
    [
      `watchers ${fmt(WATCHERS)} (${fmt(open)} open, ${fmt(refused)} refused RESOURCE_EXHAUSTED), ` +
        `${TENANT ? 'one tenant token' : 'open server (one operator)'}, heap ${fmt(HEAP_MB)} MiB`,
      `enqueued ${fmt(enqueueMs.length)} of ${fmt(JOBS)} in ${fmt(elapsed, 1)} s` +
        (crashed === null ? '' : `; the server died (${crashed as string})`),
      `server RSS MiB: at start ${fmt(atStart?.rss ?? NaN)}, watchers open ${fmt(before?.rss ?? NaN)}, ` +
        `peak sampled ${fmt(peak)}, VmHWM ${fmt(after?.hwm ?? NaN)}, at end ${fmt(after?.rss ?? NaN)}`,
      `Enqueue ms: p50 ${ms(enqueueMs, 0.5)}, p99 ${ms(enqueueMs, 0.99)}, max ${ms(enqueueMs, 1)}`,
      `Counts ms (${fmt(countsMs.length)} calls): p50 ${ms(countsMs, 0.5)}, p99 ${ms(countsMs, 0.99)}, max ${ms(countsMs, 1)}`,
    ].join('\n'),
  );
} finally {
  for (const call of calls) call.cancel();
  for (const stub of stubs) stub.close();
  for (const producer of producers) producer.close();
  reader.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
