/**
 * The client's side of Watch: a server stream of job transitions as an async
 * iterator that reconnects with its resume token, and what `result` needs
 * to know of a job's outcome.
 */
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { ErrorCode, TelhaError } from '../core/errors.ts';
import { resultJson } from '../core/results.ts';
import { JobState, type Micros, type QueueScope } from '../core/types.ts';
import { WatchRequestSchema, type WatchRequest, type WatchResponse } from '../gen/telha/v1/queue_pb.ts';
import { RESUME_TOKEN_HEADER, Status } from '../wire/service.ts';
import { jobFromWire, scopeToWire, type RemoteJob } from './convert.ts';
import { fromWireError, WireError } from './errors.ts';
import { stateToWire } from '../wire/states.ts';

export interface WatchOptions {
  /** Operators: a tenant or the system scope; omitted watches every scope. Tenants: their own. */
  readonly scope?: QueueScope;
  /** Only jobs whose kind starts with this. */
  readonly kindPrefix?: string;
  /** Only this job. */
  readonly jobId?: string;
  /** Only transitions that leave the job in one of these states (`Completed`, `Dead`, `Cancelled`: outcomes); omitted for all. */
  readonly states?: readonly JobState[];
  /** Continue after the event that carried it (`WatchEvent.resumeToken`), instead of from now. */
  readonly resumeToken?: string;
  /** Ends the watch: the iterator finishes. */
  readonly signal?: AbortSignal;
  /**
   * Called when the server has opened the watch (and again when it reopens one), with the token
   * it delivers from: every transition committed after this call is seen.
   */
  readonly onOpen?: (resumeToken: string) => void;
}

/** One transition of one job. */
export interface WatchEvent {
  /** The store's number for it: unique per store; increasing in delivery order on RocksDB, not on PostgreSQL (delivery follows commits). */
  readonly sequence: number;
  /** The job event it wrote: `enqueued`, `leased`, `progress`, `completed`, `failed`, `dead`, `reaped`, `released`, `retried`, `cancelled`. */
  readonly transition: string;
  readonly detail: string | null;
  readonly at: Micros;
  /** The job as written, with its result; without its payload and continuation, and with only its last few events. */
  readonly job: RemoteJob;
  /** Pass as `resumeToken` to continue after this event. */
  readonly resumeToken: string;
  /**
   * The size in bytes of the job's result, where the server can tell: 0 for a completed job
   * without one; over 1 KiB the event leaves the result out (`job.result` is `null`: read the job
   * with `show`). `null` where the server cannot tell (an older server, or an event it logged
   * before it could), and for a job that is not completed and has no result.
   */
  readonly resultBytes: number | null;
}

/** One message of a Watch stream: its events, and the token after them. */
export interface WatchBatch {
  readonly events: readonly WatchEvent[];
  readonly resumeToken: string;
}

/** A completed job's outcome, as `client.result` resolves it. */
export interface JobResult {
  readonly job: RemoteJob;
  /** What the handler returned, as stored; `null` for nothing. */
  readonly result: Uint8Array | null;
  /** The result read as JSON (what an SDK handler returned); `undefined` for none. */
  json<T = unknown>(): T | undefined;
}

/**
 * `client.result` for a job that ended Dead or Cancelled: `job` is its record, the message carries
 * its last failure (or its cancellation).
 */
export class JobFailedError extends TelhaError {
  override readonly name: string = 'JobFailedError';
  constructor(readonly job: RemoteJob) {
    super(ErrorCode.FailedPrecondition, failureMessage(job));
  }
}

function failureMessage(job: RemoteJob): string {
  const state = job.state === JobState.Dead ? 'dead' : 'cancelled';
  const why = [...job.events].reverse().find((e) => e.transition === (state === 'dead' ? 'failed' : 'cancelled'));
  return `job ${job.jobId} is ${state}${why?.detail ? `: ${why.detail}` : ''}`;
}

/** The outcome of a job in a final state; `null` while it may still run. */
export function outcomeOf(job: RemoteJob): JobResult | null {
  if (job.state === JobState.Completed) {
    return { job, result: job.result, json: <T>() => resultJson<T>(job) };
  }
  if (job.state === JobState.Dead || job.state === JobState.Cancelled) throw new JobFailedError(job);
  return null;
}

/** How the client opens a Watch call, and waits for its server to be reachable again before reopening one. */
export interface WatchTransport {
  open(request: WatchRequest): grpc.ClientReadableStream<WatchResponse>;
  ready(): Promise<void>;
}

/**
 * The stream's messages, the first (no events) as soon as the server has opened the watch. On
 * UNAVAILABLE (the connection dropped, the server is restarting) it reopens with the last token,
 * so nothing is missed or repeated; a store that no longer keeps the events after it (past
 * `watch.retain_secs` or `watch.retain_events`) answers FAILED_PRECONDITION, and a token of another
 * store INVALID_ARGUMENT, thrown here.
 */
export async function* watchBatches(
  transport: WatchTransport,
  options: WatchOptions,
): AsyncGenerator<WatchBatch, void> {
  let token = options.resumeToken ?? '';
  const { signal } = options;
  // Checked here too: a server older than the field sends every transition.
  const states = options.states === undefined ? null : new Set(options.states);
  while (signal?.aborted !== true) {
    const call = transport.open(
      create(WatchRequestSchema, {
        scope: scopeToWire(options.scope),
        kindPrefix: options.kindPrefix ?? '',
        jobId: options.jobId ?? '',
        resumeToken: token,
        states: options.states?.map(stateToWire) ?? [],
      }),
    );
    const cancel = (): void => call.cancel();
    signal?.addEventListener('abort', cancel, { once: true });
    let opened = false;
    try {
      for await (const message of call as AsyncIterable<WatchResponse>) {
        if (!opened) {
          opened = true;
          options.onOpen?.(message.resumeToken);
        }
        const events = message.events
          .map((event): WatchEvent => ({
            sequence: Number(event.sequence),
            transition: event.transition,
            detail: event.detail ?? null,
            at: Number(event.atUs),
            job: jobFromWire(event.job ?? failMissingJob()),
            resumeToken: event.resumeToken,
            resultBytes: event.resultBytes === undefined ? null : Number(event.resultBytes),
          }))
          .filter((event) => states === null || states.has(event.job.state));
        yield { events, resumeToken: message.resumeToken };
        token = message.resumeToken;
      }
      return;
    } catch (error) {
      if (signal?.aborted) return;
      const wire = error as Partial<grpc.ServiceError>;
      const code: number = wire.code ?? Status.UNKNOWN;
      // CANCELLED we did not ask for: the server cut the stream (a shutdown past its grace while
      // this watcher was not reading, so the UNAVAILABLE it sent could not arrive).
      const resumable =
        code === Status.UNAVAILABLE ||
        code === Status.CANCELLED ||
        (code === Status.RESOURCE_EXHAUSTED && wire.metadata?.get(RESUME_TOKEN_HEADER)[0] !== undefined);
      if (!resumable || token === '') {
        throw fromWireError(new WireError(code, wire.details ?? String(error), wire.metadata ?? new grpc.Metadata()));
      }
    } finally {
      signal?.removeEventListener('abort', cancel);
      call.cancel();
    }
    // A restarting server is not listening yet: wait for it (at most the client's timeout) rather than spin.
    await transport.ready();
  }
}

function failMissingJob(): never {
  throw new Error('server sent a watch event without its job');
}
