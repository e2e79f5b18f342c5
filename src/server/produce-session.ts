/**
 * A producer's Produce stream on the server: enqueue requests come in, each
 * with the client's id, and each is answered on the same stream with that id
 * as soon as its write is done, in whatever order they complete. A request
 * runs exactly as its unary call (Enqueue, EnqueueBatch, EnqueueEach) would,
 * with the principal the stream authenticated when it opened; its error
 * becomes its answer, not the stream's.
 *
 * At most {@link MAX_PRODUCE_IN_FLIGHT} requests are in flight: at the bound
 * the session stops reading, so the transport's flow control holds the
 * producer back, and reads again as answers go out. Whenever the session ends
 * the stream itself (the producer half-closed, the server shuts down, the open
 * was refused) it first answers every request it took and marks the end
 * "untaken": a request without an answer was never started and may be sent
 * again. Requests read once the stream is closing are not taken.
 */
import { ErrorCode, invalidArgument, TelhaError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { MAX_PRODUCE_IN_FLIGHT } from '../core/bounds.ts';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { ItemOutcome, ProduceRequest, ProduceResponseSchema } from '../gen/telha/v1/queue_pb.ts';
import { requirePermission, type Authenticator, type Principal } from '../edge/auth.ts';
import { UndecodableRequest, type Decoded } from '../wire/service.ts';
import { describeError, type WireStatus } from '../edge/status.ts';

/** What the session needs from the transport. */
export interface ProduceStream {
  readonly authorization: string | null;
  /** Aborts when the producer cancels the stream or the connection drops. */
  readonly signal: AbortSignal;
  send(message: MessageInitShape<typeof ProduceResponseSchema>): void;
  /** Stop reading requests until `resume`. */
  pause(): void;
  resume(): void;
  /** End the stream with OK, marked untaken (every request without an answer was not taken). */
  end(): void;
  /** End the stream with an error status, marked untaken. */
  fail(status: WireStatus): void;
}

/** What the transport feeds the session. */
export interface ProduceSession {
  /** A request, or one that did not decode: its id is unknown, so the stream ends INVALID_ARGUMENT. */
  receive(message: Decoded<ProduceRequest>): void;
  /** The producer half-closed: answer what was taken, then end. */
  finish(): void;
}

/** One request's enqueue: a single job, a batch or each on its own. */
export type ProduceEnqueue = Exclude<ProduceRequest['enqueue'], { case: undefined }>;

/** A request's answer, as the Produce response's `answer` field. */
export type ProduceAnswer = NonNullable<MessageInitShape<typeof ProduceResponseSchema>['answer']>;

export interface ProduceDeps {
  readonly auth: Authenticator;
  readonly logger: Logger;
  /** Aborts every session when the server shuts down: each answers what it took, then ends UNAVAILABLE. */
  readonly shutdown: AbortSignal;
  /** Counts the stream as one parked call (`server.max_parked_calls`); throws RESOURCE_EXHAUSTED over it. Returns the release. */
  admit(): () => void;
  /** Run one request as its unary call would, for `principal`; throws what the unary call would. */
  run(request: ProduceEnqueue, principal: Principal): Promise<ProduceAnswer>;
  /** An error as an item outcome: the one mapping of errors to wire codes. */
  errorOutcome(error: unknown, item: string): ItemOutcome;
}

export function openProduceSession(stream: ProduceStream, deps: ProduceDeps): ProduceSession {
  let principal: Principal | null = null;
  let admitted: (() => void) | null = null;
  let inFlight = 0;
  let paused = false;
  /** `undefined` while open; then how the stream ends once nothing is in flight (`null`: OK). */
  let closing: WireStatus | null | undefined;
  let ended = false;

  const describe = (error: unknown): WireStatus =>
    describeError(error, deps.logger, {
      method: 'produce',
      caller: principal?.name ?? null,
      tenant: principal?.tenant ?? null,
    });

  function endIfIdle(): void {
    if (closing === undefined || inFlight > 0 || ended) return;
    ended = true;
    deps.shutdown.removeEventListener('abort', onShutdown);
    stream.signal.removeEventListener('abort', onGone);
    admitted?.();
    if (stream.signal.aborted) return;
    if (closing === null) stream.end();
    else stream.fail(closing);
  }

  function close(status: WireStatus | null): void {
    if (closing !== undefined) return;
    closing = status;
    stream.pause();
    endIfIdle();
  }

  const onShutdown = (): void => close(describe(new TelhaError(ErrorCode.Unavailable, 'the server is shutting down')));
  const onGone = (): void => close(null);

  function take(message: ProduceRequest): void {
    const { id } = message;
    const who = principal as Principal;
    inFlight++;
    if (inFlight >= MAX_PRODUCE_IN_FLIGHT && !paused) {
      paused = true;
      stream.pause();
    }
    const request = message.enqueue;
    const answering =
      request.case === undefined
        ? Promise.reject(invalidArgument('enqueue', 'a Produce request carries one enqueue'))
        : deps.run(request, who);
    void answering
      .catch((error: unknown): ProduceAnswer => ({ case: 'error', value: deps.errorOutcome(error, 'request') }))
      .then((answer) => {
        inFlight--;
        if (!stream.signal.aborted) stream.send({ id, answer });
        if (paused && closing === undefined && inFlight < MAX_PRODUCE_IN_FLIGHT) {
          paused = false;
          stream.resume();
        }
        endIfIdle();
      });
  }

  stream.signal.addEventListener('abort', onGone, { once: true });
  if (deps.shutdown.aborted) onShutdown();
  else deps.shutdown.addEventListener('abort', onShutdown, { once: true });
  if (closing === undefined) {
    try {
      admitted = deps.admit();
      principal = deps.auth.authenticate(stream.authorization);
      requirePermission(principal, 'enqueue');
      deps.logger.debug({ caller: principal.name }, 'produce stream opened');
    } catch (error) {
      close(describe(error));
    }
  }

  return {
    receive(message) {
      if (closing !== undefined) return;
      if (message instanceof UndecodableRequest) close(describe(message.error));
      else take(message);
    },
    finish() {
      close(null);
    },
  };
}
