/**
 * A Watch stream on the server: the transitions log read from a position,
 * filtered to what the caller asked for and may see, written as fast as the
 * watcher reads.
 *
 * The stream holds a position, never events: it reads one batch from the
 * store, writes it, and reads the next only once the transport has taken
 * that one (for gRPC: passed it to HTTP/2, within the window the watcher's
 * flow control grants). A watcher that stops reading holds one batch of
 * server memory however far behind it falls; its position stays good for as
 * long as the log keeps the entries after it (`watch.retain_secs`,
 * `watch.retain_events`).
 */
import { ErrorCode, TelhaError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { LogFilter, LogPage } from '../core/transitions-log.ts';
import { checkJobId, checkKindPrefix } from '../core/validate.ts';
import type { ChangeFeed } from '../engine/feed.ts';
import type { Queue } from '../engine/queue.ts';
import type { WatchRequest } from '../gen/telha/v1/queue_pb.ts';
import { requirePermission, resolveScope, type Authenticator, type Principal } from '../edge/auth.ts';
import { scopeFromWire, statesFromWire } from './convert.ts';
import { describeError, type WireStatus } from '../edge/status.ts';
import type { WatchMessages } from './watch-messages.ts';

/**
 * Events per message. A grpc-js client takes 16 messages into its buffers before its reader asks
 * for any, so this also sets the server's work for a watcher that never reads: smaller messages
 * made a crowd of unread watchers cheaper to serve, and reading watchers no slower
 * (bench/RESULTS.md, "Unread Watch streams").
 */
const BATCH_EVENTS = 100;

/** What the session needs from the transport. */
export interface WatchStream {
  readonly authorization: string | null;
  /** Aborts when the watcher cancels or the connection drops. */
  readonly signal: AbortSignal;
  /**
   * Send a message, a WatchResponse encoded; resolves once the transport has taken it (or the
   * stream went away). The watch writes nothing more until then, so what waits on a watcher is
   * one message, not a queue of them.
   */
  send(message: Uint8Array): Promise<void>;
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
  /** Counts the stream as one of its caller's (`watch.max_streams_per_principal`). Returns the release. */
  admitOwn(principal: Principal): () => void;
  /** Encodes the messages, every entry's event once for all the server's watchers. */
  readonly messages: WatchMessages;
}

/**
 * Reads in a row that moved the position past entries the watcher did not ask for, after which it
 * is sent the position alone, so that its token does not fall behind retention while it waits for
 * rare events (one job's outcome, a quiet kind).
 */
const SKIPPED_READS_PER_TOKEN = 8;

export function runWatch(request: WatchRequest, stream: WatchStream, deps: WatchDeps): void {
  const { feed } = deps;
  let principal: Principal | null = null;
  let release: (() => void) | null = null;
  let releaseOwn: (() => void) | null = null;
  /** Where this watcher resumes: the position after the last entry read for it. */
  let position: string | null = null;
  /** Aborted when the stream ends, for whatever reason: stops following the log. */
  const stop = new AbortController();
  let ended = false;
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
    stop.abort();
    release?.();
    releaseOwn?.();
    endedNow();
    if (stream.signal.aborted) return;
    if (status === null) stream.end();
    else stream.fail(status, resumable ? position : null);
  }

  async function open(): Promise<LogFilter> {
    if (ended) throw new TelhaError(ErrorCode.Unavailable, 'the server is shutting down');
    release = deps.admit();
    principal = deps.auth.authenticate(stream.authorization);
    requirePermission(principal, 'watch');
    releaseOwn = deps.admitOwn(principal);
    const scope = resolveScope(principal, scopeFromWire(request.scope), true);
    const jobId = request.jobId === '' ? null : checkJobId(request.jobId);
    // A job outside the caller's scope reads as not found, as Show has it.
    if (jobId !== null) await deps.queue.show(jobId, scope);
    const filter = { scope, kindPrefix: checkKindPrefix(request.kindPrefix), jobId };
    if (request.states.length === 0) return filter;
    return { ...filter, states: statesFromWire(request.states, 'states') };
  }

  /** Write `message` and wait until the transport has taken it, or the stream ended. */
  async function write(message: Uint8Array): Promise<void> {
    await Promise.race([stream.send(message), endedSignal]);
  }

  /** Send the page's entries (or, with `tokenOnly`, its position alone), once the transport has taken the last. */
  async function send(page: LogPage, tokenOnly: boolean): Promise<void> {
    if (page.entries.length === 0 && !tokenOnly) return;
    await write(deps.messages.message(page.entries, page.position));
  }

  async function pump(filter: LogFilter): Promise<void> {
    const from = request.resumeToken === '' ? await feed.head() : request.resumeToken;
    const pages = feed.follow(from, BATCH_EVENTS, filter, stop.signal);
    // The first read checks the token (another store's, or past retention) before the watch opens.
    let next = await pages.next();
    position = from;
    await write(deps.messages.message([], from));
    let skipped = 0;
    while (!next.done && !ended) {
      const page = next.value;
      if (page.entries.length > 0) skipped = 0;
      else if (page.position !== position) skipped++;
      await send(page, skipped >= SKIPPED_READS_PER_TOKEN);
      if (skipped >= SKIPPED_READS_PER_TOKEN) skipped = 0;
      position = page.position;
      if (ended) break;
      next = await pages.next();
    }
    await pages.return(undefined);
  }

  const onGone = (): void => finish(null, false);
  stream.signal.addEventListener('abort', onGone, { once: true });
  const onShutdown = (): void =>
    finish(describe(new TelhaError(ErrorCode.Unavailable, 'the server is shutting down: resume with the token')), true);
  if (deps.shutdown.aborted) onShutdown();
  else deps.shutdown.addEventListener('abort', onShutdown, { once: true });

  void (async () => {
    try {
      const filter = await open();
      if (!ended) await pump(filter);
    } catch (error) {
      finish(describe(error), position !== null);
    } finally {
      stream.signal.removeEventListener('abort', onGone);
      deps.shutdown.removeEventListener('abort', onShutdown);
    }
  })();
}
