/**
 * OpenTelemetry spans for a job's life: `enqueue` where a producer writes it (the SDK's
 * `TelhaClient`, the embedded `Queue`), the server's handling of the enqueue call, and one span
 * per attempt where a worker runs it (the SDK's `Worker`, the embedded worker). Through
 * `@opentelemetry/api` only: the user registers an SDK and an exporter, or nothing, in which case
 * every tracer is the api's no-op one and a job carries no trace context (its record's bytes
 * stay what they were before traces existed).
 *
 * The producer's span context travels in the job itself (`JobRecord.traceContext`, W3C
 * `traceparent`/`tracestate`), written here from the span rather than through the registered
 * propagator: the field is W3C by definition, and a process that propagates B3 on its HTTP
 * calls (or registered no propagator) still links its jobs. Attributes follow OpenTelemetry's
 * messaging conventions (`messaging.system` is `telha`, the destination is the job's kind).
 */
import {
  context,
  createTraceState,
  isSpanContextValid,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import type { NewJob, TraceContext } from '../core/types.ts';

/** The instrumentation scope every Telha span is reported under. */
export const TRACER_NAME = 'telha';

/**
 * Looked up once: with no SDK registered yet this is the api's proxy tracer, which forwards to
 * the SDK registered later, so a program may register its SDK after importing Telha.
 */
const tracer: Tracer = trace.getTracer(TRACER_NAME);

/** The api's no-op provider, which the global proxy forwards to until an SDK is registered. */
const NO_SDK = new ProxyTracerProvider().getDelegate();

/**
 * Whether a span begun now would be neither recorded nor carried: no SDK is registered (the
 * global provider is still this api's proxy with nothing behind it) and the active context holds
 * no span a job could carry. Then the spans below are skipped, not made and dropped: a no-op span
 * still costs its attributes and contexts, on every call through the server (bench/RESULTS.md,
 * "Instructions per job"). A provider registered through another copy of the api is not this
 * proxy, so it counts as registered.
 */
function untraced(): boolean {
  const provider = trace.getTracerProvider();
  return (
    provider instanceof ProxyTracerProvider &&
    provider.getDelegate() === NO_SDK &&
    trace.getSpanContext(context.active()) === undefined
  );
}

const MESSAGING = {
  system: 'messaging.system',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  destination: 'messaging.destination.name',
  messageId: 'messaging.message.id',
  batchCount: 'messaging.batch.message_count',
  clientId: 'messaging.client.id',
} as const;
/** The attempt a worker runs, counted from 1 (the record's `attempts` counts those consumed). */
export const ATTEMPT_ATTRIBUTE = 'telha.job.attempt';
/** How a traced attempt ended: completed, failed, dead (failed permanently), lease_lost, timed_out, released. */
export const OUTCOME_ATTRIBUTE = 'telha.job.outcome';

/** A traced job's context as its header carries it: `00-<trace id>-<span id>-<flags>`. */
export function traceparentOf(spanContext: SpanContext): string {
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/** The context a span carries into a job, or `null` when it has none worth carrying (no SDK). */
export function traceContextOf(span: Span): TraceContext | null {
  const spanContext = span.spanContext();
  if (!isSpanContextValid(spanContext)) return null;
  const tracestate = spanContext.traceState?.serialize() ?? '';
  return { traceparent: traceparentOf(spanContext), tracestate: tracestate === '' ? null : tracestate };
}

/**
 * The span context a job carries, as a remote parent: `null` for a job without one, or with a
 * `traceparent` this version cannot read (a later version's fields after the four are ignored,
 * as the W3C recommendation asks).
 */
export function spanContextOf(traceContext: TraceContext | null): SpanContext | null {
  if (traceContext === null) return null;
  const [version, traceId, spanId, flags] = traceContext.traceparent.split('-');
  if (version === undefined || traceId === undefined || spanId === undefined || flags === undefined) return null;
  const spanContext: SpanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & 0x01,
    isRemote: true,
    ...(traceContext.tracestate === null ? {} : { traceState: createTraceState(traceContext.tracestate) }),
  };
  return isSpanContextValid(spanContext) ? spanContext : null;
}

/** `jobs`, each without a trace context given the span's; the same array when there is none to give. */
function stamped<J extends NewJob>(jobs: readonly J[], traceContext: TraceContext | null): readonly J[] {
  if (traceContext === null) return jobs;
  return jobs.map((job) => (job.traceContext === undefined ? { ...job, traceContext } : job));
}

function endWithError(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  span.end();
}

/**
 * Enqueue `jobs` under a producer span (`enqueue <kind>`): each job without a trace context of
 * its own is sent carrying the span's, so the attempts that run it join this trace. `idOf`
 * names the job a one-job call created, for `messaging.message.id`.
 */
export async function tracedEnqueue<J extends NewJob, R>(
  jobs: readonly J[],
  send: (jobs: readonly J[]) => Promise<R>,
  idOf: (result: R) => string | null,
): Promise<R> {
  const first = jobs[0];
  if (first === undefined || untraced()) return send(jobs);
  const attributes: Attributes = {
    [MESSAGING.system]: 'telha',
    [MESSAGING.operationType]: 'send',
    [MESSAGING.operationName]: 'enqueue',
    [MESSAGING.destination]: first.kind,
  };
  if (jobs.length > 1) attributes[MESSAGING.batchCount] = jobs.length;
  const span = tracer.startSpan(`enqueue ${first.kind}`, { kind: SpanKind.PRODUCER, attributes });
  const active = trace.setSpan(context.active(), span);
  let result: R;
  try {
    result = await context.with(active, send, undefined, stamped(jobs, traceContextOf(span)));
  } catch (error) {
    endWithError(span, error);
    throw error;
  }
  if (jobs.length === 1 && span.isRecording()) {
    const id = idOf(result);
    if (id !== null) span.setAttribute(MESSAGING.messageId, id);
  }
  span.end();
  return result;
}

/**
 * Handle an enqueue call under a server span (`method`), as a child of the trace its jobs
 * carry when they all carry one trace (one producer call), else linked to each job's.
 */
export async function tracedHandling<R>(
  method: string,
  traceContexts: readonly (TraceContext | null)[],
  handle: () => Promise<R>,
): Promise<R> {
  // The jobs' contexts are only linked to the server's span: with no SDK there is none to link.
  if (untraced()) return handle();
  const carried: SpanContext[] = [];
  for (const traceContext of traceContexts) {
    const spanContext = spanContextOf(traceContext);
    if (spanContext !== null) carried.push(spanContext);
  }
  const first = carried[0];
  const oneTrace =
    first !== undefined && carried.every((c) => c.traceId === first.traceId && c.spanId === first.spanId);
  const attributes: Attributes = {
    'rpc.system': 'grpc',
    'rpc.service': 'telha.v1.Queue',
    'rpc.method': method,
    [MESSAGING.system]: 'telha',
    [MESSAGING.operationType]: 'receive',
    [MESSAGING.operationName]: 'enqueue',
  };
  const base = context.active();
  const parentContext = oneTrace ? trace.setSpanContext(base, first) : base;
  const links: Link[] = oneTrace ? [] : carried.slice(0, MAX_LINKS).map((spanContext) => ({ context: spanContext }));
  const span = tracer.startSpan(
    `telha.v1.Queue/${method}`,
    { kind: SpanKind.SERVER, attributes, links },
    parentContext,
  );
  try {
    const result = await context.with(trace.setSpan(parentContext, span), handle);
    span.end();
    return result;
  } catch (error) {
    endWithError(span, error);
    throw error;
  }
}

/** An attempt of a job without a trace context, with no SDK: no span, nothing to carry. */
const UNTRACED_ATTEMPT: AttemptSpan = Object.freeze({
  run: <T>(handler: () => Promise<T>): Promise<T> => context.with(ROOT_CONTEXT, handler),
  stamp: <J extends NewJob>(successors: readonly J[]): readonly J[] => successors,
  end: (): void => undefined,
});

/** A server span links to at most this many jobs of one call: enough to find them, bounded for a 10,000-job batch. */
const MAX_LINKS = 128;

/** The job an attempt runs, as much of it as its span needs. */
export interface AttemptJob {
  readonly jobId: string;
  readonly kind: string;
  readonly attempts: number;
  readonly traceContext: TraceContext | null;
}

/** One attempt's span, begun when its handler takes a slot and ended with the attempt's outcome. */
export interface AttemptSpan {
  /** Run the handler with the attempt's span active, so the handler's own spans are its children. */
  run<T>(handler: () => Promise<T>): Promise<T>;
  /** `successors` a handler chained, each without a trace context given the attempt's, so they join its trace. */
  stamp<J extends NewJob>(successors: readonly J[]): readonly J[];
  /** End the span with how the attempt ended; `error` for an attempt that failed. */
  end(outcome: string, error?: unknown): void;
}

/**
 * Begin the span of one attempt (`process <kind>`): a child of the producer's enqueue span when
 * the job carries its context, and linked to it as the messaging conventions ask of a consumer,
 * so each retry is one more such span under the same enqueue (`telha.job.attempt` tells them
 * apart). A job without a context starts a trace of its own (none at all with no SDK).
 */
export function startAttemptSpan(job: AttemptJob, workerId: string): AttemptSpan {
  const producer = spanContextOf(job.traceContext);
  // A job that carries a producer's context takes the full path even with no SDK: the no-op span
  // begun under that context passes it on to the handler and to the successors.
  if (producer === null && untraced()) return UNTRACED_ATTEMPT;
  const parentContext = producer === null ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, producer);
  const span = tracer.startSpan(
    `process ${job.kind}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        [MESSAGING.system]: 'telha',
        [MESSAGING.operationType]: 'process',
        [MESSAGING.operationName]: 'process',
        [MESSAGING.destination]: job.kind,
        [MESSAGING.messageId]: job.jobId,
        [MESSAGING.clientId]: workerId,
        [ATTEMPT_ATTRIBUTE]: job.attempts + 1,
      },
      ...(producer === null ? {} : { links: [{ context: producer }] }),
    },
    parentContext,
  );
  const active: Context = trace.setSpan(parentContext, span);
  let ended = false;
  return {
    run: (handler) => context.with(active, handler),
    stamp: (successors) => stamped(successors, traceContextOf(span)),
    end: (outcome, error) => {
      if (ended) return;
      ended = true;
      span.setAttribute(OUTCOME_ATTRIBUTE, outcome);
      if (error === undefined) {
        if (outcome === 'completed') span.setStatus({ code: SpanStatusCode.OK });
        span.end();
      } else {
        endWithError(span, error);
      }
    },
  };
}
