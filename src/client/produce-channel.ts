/**
 * The producer's end of a Produce stream: the client's Enqueue, EnqueueBatch
 * and EnqueueEach calls as messages on one long-lived stream, each answered
 * by id, instead of a call each: a message on an open grpc-js stream
 * round-trips in a fraction of a unary call's time and client CPU
 * (bench/RESULTS.md, "Produce stream").
 *
 * The stream opens with the first request and half-closes after
 * {@link PRODUCE_IDLE_MS} without one (so a program that forgets `close()`
 * still exits). At most {@link MAX_PRODUCE_IN_FLIGHT} requests are on the
 * stream at once; later ones wait here, in order.
 *
 * When a stream ends, a request without an answer is sent again on a new
 * stream only where that cannot create a job twice: the server ended the
 * stream itself and said it did not take it (`telha-untaken`), or every job
 * in it carries an idempotency key (a repeat returns the first job). Any other
 * request fails UNAVAILABLE, as a unary call whose response was lost does: it
 * may or may not have been written. A server without Produce (UNIMPLEMENTED)
 * gets unary calls from then on.
 */
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { MAX_PRODUCE_IN_FLIGHT } from '../core/bounds.ts';
import { ProduceRequestSchema, type ProduceRequest, type ProduceResponse } from '../gen/telha/v1/queue_pb.ts';
import { Status, UNTAKEN_HEADER, type ProduceMethod, type RequestOf, type ResponseOf } from '../wire/service.ts';
import { cancelledError, fromWireError, outcomeToError, WireError } from './errors.ts';

/** An idle stream (nothing in flight or waiting) half-closes after this long. */
export const PRODUCE_IDLE_MS = 1_000;

type Stream = grpc.ClientDuplexStream<ProduceRequest, ProduceResponse>;

/** How each method travels in a Produce request (and comes back in its answer). */
const CASE = { enqueue: 'single', enqueueBatch: 'batch', enqueueEach: 'each' } as const;

/** Per-request options, as a unary call takes them. */
export interface ProduceCallOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

/** What the channel needs from the client. */
export interface ProduceTransport {
  /** Open a Produce stream; `waitForReady` waits for a connection instead of failing at once. */
  open(waitForReady: boolean): Stream;
  /** The same request as a unary call (a server without Produce). */
  unary<K extends ProduceMethod>(method: K, request: RequestOf<K>, options: ProduceCallOptions): Promise<ResponseOf<K>>;
}

interface Pending {
  readonly id: bigint;
  readonly method: ProduceMethod;
  readonly request: RequestOf<ProduceMethod>;
  readonly message: ProduceRequest;
  readonly options: ProduceCallOptions;
  /** Every job carries an idempotency key: sending it twice cannot create a job twice. */
  readonly repeatable: boolean;
  /** Answered, timed out or cancelled: a late answer is dropped. */
  done: boolean;
  /** The stream it was last written on. */
  stream: Stream | null;
  resolve(this: void, response: unknown): void;
  reject(this: void, error: Error): void;
}

export class ProduceChannel {
  private stream: Stream | null = null;
  private nextId = 1n;
  private queued: Pending[] = [];
  /** Written on the current stream, not yet answered (also those given up on: the server still holds them). */
  private readonly inFlight = new Map<bigint, Pending>();
  private unsupported = false;
  private closed = false;
  /** Requests are being sent again after a stream failed: wait for the server to come back. */
  private reconnecting = false;
  private idleTimer: NodeJS.Timeout | null = null;
  private lastActive = 0;

  constructor(private readonly transport: ProduceTransport) {}

  /** Send one request; resolves with its response, rejects with the error its unary call would have. */
  call<K extends ProduceMethod>(method: K, request: RequestOf<K>, options: ProduceCallOptions): Promise<ResponseOf<K>> {
    if (this.unsupported || this.closed) return this.transport.unary(method, request, options);
    return new Promise<ResponseOf<K>>((resolve, reject) => {
      const { signal } = options;
      if (signal?.aborted) {
        reject(cancelledError());
        return;
      }
      const id = this.nextId++;
      const giveUp = (error: Error): void => {
        if (pending.done) return;
        pending.reject(error);
        const at = this.queued.indexOf(pending);
        if (at >= 0) this.queued.splice(at, 1);
      };
      const onAbort = (): void => giveUp(cancelledError());
      const timer = setTimeout(
        () => giveUp(wireError(Status.DEADLINE_EXCEEDED, 'Deadline exceeded')),
        options.timeoutMs,
      );
      const finish = (): void => {
        pending.done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const pending: Pending = {
        id,
        method,
        request,
        message: create(ProduceRequestSchema, {
          id,
          enqueue: { case: CASE[method], value: request } as ProduceRequest['enqueue'],
        }),
        options,
        repeatable: isRepeatable(request),
        done: false,
        stream: null,
        resolve: (response) => {
          finish();
          resolve(response as ResponseOf<K>);
        },
        reject: (error) => {
          finish();
          reject(error);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queued.push(pending);
      this.pump();
    });
  }

  /** Half-close: the server answers what it took and ends the stream. Requests not yet sent go as unary calls. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.stream?.end();
    this.stream = null;
    for (const pending of this.queued.splice(0)) this.viaUnary(pending);
  }

  private pump(): void {
    while (this.queued.length > 0 && this.inFlight.size < MAX_PRODUCE_IN_FLIGHT) {
      const pending = this.queued.shift() as Pending;
      if (pending.done) continue;
      const stream = this.stream ?? this.open();
      pending.stream = stream;
      this.inFlight.set(pending.id, pending);
      stream.write(pending.message);
    }
    this.lastActive = performance.now();
  }

  private open(): Stream {
    const stream = this.transport.open(this.reconnecting);
    this.stream = stream;
    stream.on('data', (message: ProduceResponse) => this.answer(message));
    // The status follows the last message; 'error' repeats a failed status (and must have a listener).
    stream.on('error', () => {});
    stream.on('status', (status: grpc.StatusObject) => {
      // Let answers already received be delivered first.
      setImmediate(() => this.ended(stream, status));
    });
    this.armIdle();
    return stream;
  }

  private answer(message: ProduceResponse): void {
    this.reconnecting = false;
    const pending = this.inFlight.get(message.id);
    if (pending === undefined) return;
    this.inFlight.delete(message.id);
    if (!pending.done) {
      const { answer } = message;
      if (answer.case === 'error') pending.reject(outcomeToError(answer.value, '') ?? new Error('empty error'));
      else if (answer.case === CASE[pending.method]) pending.resolve(answer.value);
      else
        pending.reject(new Error(`the server answered a ${pending.method} request with ${answer.case ?? 'nothing'}`));
    }
    if (this.queued.length > 0) this.pump();
    else this.lastActive = performance.now();
  }

  /** A stream ended: send again what cannot create a job twice, fail the rest. */
  private ended(stream: Stream, status: grpc.StatusObject): void {
    if (this.stream === stream) this.stream = null;
    const unanswered: Pending[] = [];
    for (const pending of this.inFlight.values()) {
      if (pending.stream !== stream) continue;
      this.inFlight.delete(pending.id);
      if (!pending.done) unanswered.push(pending);
    }
    const untaken = status.metadata.get(UNTAKEN_HEADER)[0] === '1';
    if (status.code === grpc.status.UNIMPLEMENTED && !untaken) {
      // A server without Produce: nothing was taken; unary calls from now on.
      this.unsupported = true;
      for (const pending of [...unanswered, ...this.queued.splice(0)]) this.viaUnary(pending);
      return;
    }
    const error =
      status.code === grpc.status.OK
        ? wireError(Status.UNAVAILABLE, 'the produce stream ended before answering')
        : fromWireError(new WireError(status.code, status.details, status.metadata));
    // The server ended the stream itself, answering every request it took: resend on a new
    // stream when it went away (shutdown, half-close), fail with its status when it refused.
    const resendUntaken = untaken && (status.code === grpc.status.OK || status.code === grpc.status.UNAVAILABLE);
    if (untaken && status.code === grpc.status.RESOURCE_EXHAUSTED) {
      // Refused at open (the server's call budget is full): nothing was taken; try each as a unary call.
      for (const pending of unanswered) this.viaUnary(pending);
      unanswered.length = 0;
    }
    const again: Pending[] = [];
    for (const pending of unanswered) {
      if (resendUntaken || (!untaken && pending.repeatable)) again.push(pending);
      else pending.reject(error);
    }
    if (again.length > 0) {
      this.reconnecting = true;
      this.queued = [...again, ...this.queued];
    }
    if (this.queued.length > 0 && !this.closed) this.pump();
    else if (this.closed) for (const pending of this.queued.splice(0)) this.viaUnary(pending);
  }

  private viaUnary(pending: Pending): void {
    if (pending.done) return;
    this.transport.unary(pending.method, pending.request, pending.options).then(
      (response) => pending.resolve(response),
      (error: unknown) => pending.reject(error as Error),
    );
  }

  /** Half-close the stream once it has been idle for {@link PRODUCE_IDLE_MS}. */
  private armIdle(): void {
    if (this.idleTimer !== null) return;
    const check = (): void => {
      this.idleTimer = null;
      const stream = this.stream;
      if (stream === null || this.closed) return;
      const idleFor = performance.now() - this.lastActive;
      const waiting = [...this.inFlight.values()].some((pending) => !pending.done) || this.queued.length > 0;
      if (!waiting && idleFor >= PRODUCE_IDLE_MS) {
        this.stream = null;
        // Requests given up on (deadline, abort) may still be on it, unanswered: drop them with it.
        if (this.inFlight.size > 0) stream.cancel();
        else stream.end();
        return;
      }
      this.idleTimer = setTimeout(check, Math.max(1, PRODUCE_IDLE_MS - idleFor));
      this.idleTimer.unref();
    };
    this.idleTimer = setTimeout(check, PRODUCE_IDLE_MS);
    this.idleTimer.unref();
  }
}

function wireError(code: Status, details: string): Error {
  return fromWireError(new WireError(code, details, new grpc.Metadata()));
}

/** Whether every job of a request carries an idempotency key, so a repeat returns the first jobs. */
function isRepeatable(request: RequestOf<ProduceMethod>): boolean {
  const jobs = 'jobs' in request ? request.jobs : [request.job];
  return jobs.length > 0 && jobs.every((job) => job?.idempotencyKey !== undefined);
}
