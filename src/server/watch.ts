/**
 * A Watch stream on the server: the change feed's events, filtered to what
 * the caller asked for and may see, written as fast as the watcher reads.
 *
 * Memory stays bounded by the feed's ring buffer: a stream writes one batch,
 * and when gRPC's send buffer is full it waits for 'drain' instead of
 * queueing more. A watcher that falls half the buffer behind while it is not
 * reading is ended with RESOURCE_EXHAUSTED and its resume token: resuming at
 * once continues without a gap, as the other half still holds its next events.
 */
import { ErrorCode, TelhaError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { inScope } from '../core/scope.ts';
import type { JobRecord, ScopeFilter } from '../core/types.ts';
import { checkJobId } from '../core/validate.ts';
import type { ChangeFeed, FeedEvent } from '../engine/feed.ts';
import type { Queue } from '../engine/queue.ts';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { Job, WatchRequest, WatchResponseSchema } from '../gen/telha/v1/queue_pb.ts';
import { requirePermission, resolveScope, type Authenticator, type Principal } from './auth.ts';
import { scopeFromWire } from './convert.ts';
import { describeError, type WireStatus } from './status.ts';

/** Events per message: large enough to amortise a write, small enough to keep one message modest. */
const BATCH_EVENTS = 500;

/** What the session needs from the transport. */
export interface WatchStream {
  readonly authorization: string | null;
  /** Aborts when the watcher cancels or the connection drops. */
  readonly signal: AbortSignal;
  /** Send a message; `false` when the transport's buffer is full (wait for `drained`). */
  send(message: MessageInitShape<typeof WatchResponseSchema>): boolean;
  /** Resolves when a full buffer has room again, or the stream went away. */
  drained(): Promise<void>;
  end(): void;
  /** End the stream with an error status, carrying `resumeToken` when the watcher may continue. */
  fail(status: WireStatus, resumeToken: string | null): void;
}

export interface WatchDeps {
  readonly queue: Queue;
  readonly feed: ChangeFeed;
  readonly auth: Authenticator;
  readonly logger: Logger;
  /** Aborts every watch when the server shuts down: each ends UNAVAILABLE with its resume token. */
  readonly shutdown: AbortSignal;
  /** Counts the stream as one parked call (`server.max_parked_calls`). Returns the release. */
  admit(): () => void;
  toWire(job: JobRecord): Job;
}

interface Filter {
  readonly scope: ScopeFilter;
  readonly kindPrefix: string;
  readonly jobId: string | null;
}

export function runWatch(request: WatchRequest, stream: WatchStream, deps: WatchDeps): void {
  const { feed } = deps;
  let principal: Principal | null = null;
  let release: (() => void) | null = null;
  let unsubscribe: (() => void) | null = null;
  /** The last sequence number this watcher was sent (or skipped as not its own). */
  let seen = 0;
  let wake: (() => void) | null = null;
  let ended = false;
  /** Waiting for the transport's buffer to drain: the watcher is not reading. */
  let draining = false;
  let endedNow: () => void = () => undefined;
  const endedSignal = new Promise<void>((resolve) => {
    endedNow = resolve;
  });

  const describe = (error: unknown): WireStatus =>
    describeError(error, deps.logger, {
      method: 'watch',
      caller: principal?.name ?? null,
      tenant: principal?.tenant ?? null,
    });

  function finish(status: WireStatus | null, resumable: boolean): void {
    if (ended) return;
    ended = true;
    unsubscribe?.();
    release?.();
    wake?.();
    endedNow();
    if (stream.signal.aborted) return;
    if (status === null) stream.end();
    else stream.fail(status, resumable ? feed.token(seen) : null);
  }

  async function open(): Promise<Filter> {
    if (ended) throw new TelhaError(ErrorCode.Unavailable, 'the server is shutting down');
    release = deps.admit();
    principal = deps.auth.authenticate(stream.authorization);
    requirePermission(principal, 'watch');
    const scope = resolveScope(principal, scopeFromWire(request.scope), true);
    const jobId = request.jobId === '' ? null : checkJobId(request.jobId);
    // A job outside the caller's scope reads as not found, as Show has it.
    if (jobId !== null) await deps.queue.show(jobId, scope);
    seen = request.resumeToken === '' ? feed.lastSeq : feed.resume(request.resumeToken);
    return { scope, kindPrefix: request.kindPrefix, jobId };
  }

  const matches = (event: FeedEvent, filter: Filter): boolean =>
    inScope(event.job, filter.scope) &&
    event.job.kind.startsWith(filter.kindPrefix) &&
    (filter.jobId === null || event.job.jobId === filter.jobId);

  /** Resolves at the feed's next append, or when the stream ends. */
  const nextAppend = (): Promise<void> =>
    new Promise<void>((resolve) => {
      wake = resolve;
    });

  async function drained(): Promise<void> {
    draining = true;
    await Promise.race([stream.drained(), endedSignal]);
    draining = false;
  }

  async function pump(filter: Filter): Promise<void> {
    unsubscribe = feed.subscribe(() => {
      // Behind by half the buffer while the watcher is not reading: end it while its resume
      // token still works, rather than let the events it needs leave the buffer.
      if (draining && feed.lastSeq - seen > Math.max(1, Math.floor(feed.capacity / 2))) {
        finish(
          describe(
            new TelhaError(
              ErrorCode.ResourceExhausted,
              `the watcher fell ${feed.lastSeq - seen} events behind (watch.buffer_events is ${feed.capacity}): resume with the token`,
            ),
          ),
          true,
        );
        return;
      }
      const waking = wake;
      wake = null;
      waking?.();
    });
    if (!stream.send({ resumeToken: feed.token(seen) })) await drained();
    while (!ended) {
      const batch = feed.after(seen, BATCH_EVENTS);
      if (batch === null) {
        throw new TelhaError(ErrorCode.ResourceExhausted, 'the watcher fell behind the buffer: resume with the token');
      }
      const last = batch[batch.length - 1];
      if (last === undefined) {
        await nextAppend();
        continue;
      }
      const events = batch.filter((event) => matches(event, filter));
      seen = last.seq;
      if (events.length === 0) continue;
      const sent = stream.send({
        events: events.map((event) => ({
          sequence: BigInt(event.seq),
          transition: event.transition,
          ...(event.detail === null ? {} : { detail: event.detail }),
          atUs: BigInt(event.at),
          job: deps.toWire(event.job),
        })),
        resumeToken: feed.token(seen),
      });
      if (!sent) await drained();
    }
  }

  const onGone = (): void => finish(null, false);
  stream.signal.addEventListener('abort', onGone, { once: true });
  const onShutdown = (): void =>
    finish(describe(new TelhaError(ErrorCode.Unavailable, 'the server is shutting down: resume with the token')), true);
  if (deps.shutdown.aborted) onShutdown();
  else deps.shutdown.addEventListener('abort', onShutdown, { once: true });

  void (async () => {
    let resumable = false;
    try {
      const filter = await open();
      resumable = true;
      if (!ended) await pump(filter);
    } catch (error) {
      finish(describe(error), resumable);
    } finally {
      stream.signal.removeEventListener('abort', onGone);
      deps.shutdown.removeEventListener('abort', onShutdown);
    }
  })();
}
