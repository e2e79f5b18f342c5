/**
 * The transport's floor: how many sequential round trips of a 64-byte
 * message two processes on this machine make per second over raw TCP, a
 * `node:http2` stream, a grpc-js bidi stream and grpc-js unary calls
 * (the other end: bench/peers/echo-server.ts, a child process). An awaited
 * call through `telha serve` is one gRPC round trip plus the queue's work, so
 * these say how far each path is from what the transport allows.
 */
import * as grpc from '@grpc/grpc-js';
import { spawn } from 'node:child_process';
import { connect as connectHttp2 } from 'node:http2';
import { connect as connectTcp } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ECHO_SERVICE } from './echo-service.ts';
import { median } from '../support.ts';

export interface FloorPath {
  readonly id: 'tcp' | 'http2' | 'grpcBidi' | 'grpcUnary';
  readonly label: string;
  /** Round trips per second, sequential. */
  readonly rate: number;
  /** Median round trip, µs. */
  readonly p50Micros: number;
}

const MESSAGE = Buffer.alloc(64, 7);

/** Time `n` sequential round trips of `roundTrip` after `warmUp` unmeasured ones. */
async function time(
  roundTrip: () => Promise<void>,
  n: number,
  warmUp: number,
): Promise<{ rate: number; p50Micros: number }> {
  for (let i = 0; i < warmUp; i++) await roundTrip();
  const samples: number[] = [];
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await roundTrip();
    samples.push((performance.now() - t) * 1000);
  }
  return { rate: n / ((performance.now() - started) / 1000), p50Micros: median(samples) };
}

/** A sequential reader of a byte stream: resolves each wait once `length` more bytes arrived. */
function echoes(stream: NodeJS.ReadableStream & { write(data: Buffer): boolean }): () => Promise<void> {
  let received = 0;
  let wanted = 0;
  let wake: (() => void) | null = null;
  stream.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (wake !== null && received >= wanted) {
      const resolve = wake;
      wake = null;
      resolve();
    }
  });
  return () =>
    new Promise<void>((resolve) => {
      wanted += MESSAGE.length;
      wake = resolve;
      stream.write(MESSAGE);
    });
}

/** Measure every path against a fresh echo process; `n` round trips each. */
export async function measureFloor(n: number, warmUp = Math.min(500, n)): Promise<FloorPath[]> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('echo-server.ts', import.meta.url))],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    const lines = createInterface({ input: child.stdout });
    let ports: { tcp: number; http2: number; grpc: number } | null = null;
    for await (const line of lines) {
      ports = JSON.parse(line) as { tcp: number; http2: number; grpc: number };
      break;
    }
    if (ports === null) throw new Error('the echo server exited before listening');
    const paths: FloorPath[] = [];

    const socket = connectTcp({ host: '127.0.0.1', port: ports.tcp, noDelay: true });
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    paths.push({ id: 'tcp', label: 'raw TCP', ...(await time(echoes(socket), n, warmUp)) });
    socket.destroy();

    const session = connectHttp2(`http://127.0.0.1:${ports.http2}`);
    const request = session.request({ ':method': 'POST', ':path': '/echo' });
    paths.push({ id: 'http2', label: 'node:http2 stream', ...(await time(echoes(request), n, warmUp)) });
    request.close();
    session.close();

    const Client = grpc.makeGenericClientConstructor(ECHO_SERVICE, 'Echo');
    const client = new Client(
      `127.0.0.1:${ports.grpc}`,
      grpc.credentials.createInsecure(),
    ) as unknown as grpc.Client & {
      bidi(): grpc.ClientDuplexStream<Buffer, Buffer>;
      unary(request: Buffer, callback: (error: grpc.ServiceError | null) => void): void;
    };
    const bidi = client.bidi();
    let answered: (() => void) | null = null;
    bidi.on('data', () => answered?.());
    const bidiRoundTrip = (): Promise<void> =>
      new Promise<void>((resolve) => {
        answered = resolve;
        bidi.write(MESSAGE);
      });
    paths.push({ id: 'grpcBidi', label: 'grpc-js bidi stream', ...(await time(bidiRoundTrip, n, warmUp)) });
    bidi.end();
    const unaryRoundTrip = (): Promise<void> =>
      new Promise<void>((resolve, reject) => client.unary(MESSAGE, (error) => (error ? reject(error) : resolve())));
    paths.push({ id: 'grpcUnary', label: 'grpc-js unary call', ...(await time(unaryRoundTrip, n, warmUp)) });
    client.close();
    return paths;
  } finally {
    child.stdin.end();
    await exited;
  }
}
