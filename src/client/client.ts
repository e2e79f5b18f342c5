/**
 * The producer and operator client: enqueue, show, list, counts, retry, cancel, and
 * the low-level worker calls the {@link Worker} is built on. Speaks only the
 * wire protocol; errors come back as `TelhaError` / `LeaseConflictError`.
 */
import * as grpc from '@grpc/grpc-js';
import type { KindLimitStatus } from '../core/kind-limits.ts';
import type { TenantLimitStatus } from '../core/tenant-limits.ts';
import type { Pause, PauseScope } from '../core/pauses.ts';
import { formatRate, type Rate } from '../core/rate.ts';
import type { NewSchedule, Schedule, ScheduleChanges } from '../core/schedules.ts';
import {
  JobState as JobStateCore,
  type CountRow,
  type EnqueueResult,
  type ItemResult,
  type JobState,
  type LeaseFence,
  type ListPage,
  type NewJob as NewJobInit,
  type QueueScope,
} from '../core/types.ts';
import { create } from '@bufbuild/protobuf';
import {
  WorkOpenSchema,
  type EnqueueResult as WireEnqueueResult,
  type NewJob,
  type ProduceRequest,
  type ProduceResponse,
  type Scope,
  type WatchRequest,
  type WatchResponse,
  type WorkRequest,
  type WorkResponse,
} from '../gen/telha/v1/queue_pb.ts';
import { ErrorCode, TelhaError } from '../core/errors.ts';
import { MAX_SETTLE_BATCH } from '../core/bounds.ts';
import {
  MAX_MESSAGE_BYTES,
  queueServiceDefinition,
  requestOf,
  type MethodName,
  type ProduceMethod,
  type RequestInitOf,
  type ResponseOf,
} from '../wire/service.ts';
import { checkWireInteger } from '../wire/integers.ts';
import { ProduceChannel } from './produce-channel.ts';
import { cancelledError, fromWireError, outcomeToError, outcomesToResults, WireError } from './errors.ts';
import {
  completeToWire,
  checkpointToWire,
  failToWire,
  heartbeatToWire,
  jobFromWire,
  newJobToWire,
  newScheduleToWire,
  releaseToWire,
  scheduleChangesToWire,
  kindLimitFromWire,
  tenantLimitFromWire,
  pauseFromWire,
  scheduleFromWire,
  scopeToWire,
  type RemoteJob,
} from './convert.ts';
import type { WorkSessionEvents } from '../worker/source.ts';
import { WorkChannel } from './work-channel.ts';
import { ResultFollower } from './result-follower.ts';
import { watchBatches, type JobResult, type WatchTransport, type WatchEvent, type WatchOptions } from './watch.ts';
import { listOrderToWire, stateFromWire, stateToWire } from '../wire/states.ts';
import type { ListOrder } from '../core/list-order.ts';

/** Where the server is and how to reach it; every field is optional. */
export interface ClientOptions {
  /** `host:port` of `telha serve`, e.g. `127.0.0.1:7070` (the default). */
  readonly address?: string;
  /** Bearer token; omit when the server has none configured. */
  readonly token?: string;
  /** Use TLS. Default `false`. */
  readonly tls?: boolean;
  /** PEM root certificates to trust for TLS, instead of the system's. */
  readonly ca?: Buffer;
  /** Per-call timeout in ms for calls that do not wait (default 30 s). */
  readonly timeoutMs?: number;
  /**
   * Send `enqueue` and `enqueueBatch` as messages on one `Produce` stream, opened with the first
   * and reconnected as needed (default `true`): one message and one answer each, not a call
   * each. `false` sends each as a unary call. A server without Produce gets unary calls anyway.
   */
  readonly produceStream?: boolean;
}

export { DEFAULT_ADDRESS } from '../core/defaults.ts';
import { DEFAULT_ADDRESS } from '../core/defaults.ts';
import { tracedEnqueue } from '../tracing/spans.ts';

/** A page of `list`: the filters, the page size and where to continue. */
export interface ListOptions {
  /** Operators: a tenant or the system scope; omitted lists every scope. Tenants: their own. */
  readonly scope?: QueueScope;
  /** Only jobs in this state. */
  readonly state?: JobState;
  /** Only kinds starting with this. */
  readonly kindPrefix?: string;
  /** Jobs per page, 1-1,000; default 100. */
  readonly limit?: number;
  /** The previous page's `nextPageToken`. */
  readonly pageToken?: string;
  /** Default `newest_first`: by creation time, then job id, across priorities and scopes. */
  readonly order?: ListOrder;
  /**
   * Across every scope, list the system scope's own jobs (`system:prune`) too; default only when
   * `kindPrefix` starts with `system:`.
   */
  readonly includeSystem?: boolean;
}

/** Options of `cancel`. */
export interface CancelOptions {
  /** Why, kept in the job's `cancelled` event. */
  readonly reason?: string;
}

/** Which jobs `cancelMatching` cancels: across every scope, a kind prefix is required. */
export interface CancelMatchingOptions {
  /** Operators: a tenant or the system scope; omitted means every scope (then `kindPrefix` is required). Tenants: their own. */
  readonly scope?: QueueScope;
  /** `JobState.Pending` or `JobState.Leased`; omitted cancels both. */
  readonly state?: JobState;
  /** Only kinds starting with this; omitted matches every kind. */
  readonly kindPrefix?: string;
}

/** A page of `listSchedules`. */
export interface ScheduleListOptions {
  /** Operators: a tenant or the system scope; omitted lists every scope. Tenants: their own. */
  readonly scope?: QueueScope;
  /** Schedules per page, 1-1,000. */
  readonly limit?: number;
  /** The previous page's `nextPageToken`. */
  readonly pageToken?: string;
}

/** One page of schedules. */
export interface SchedulePage {
  readonly schedules: readonly Schedule[];
  /** Pass back as `pageToken` for the next page; `null` at the end. */
  readonly nextPageToken: string | null;
}

/**
 * A unary `lease` call, for workers that do not use the SDK's `Worker` (which leases on a `Work`
 * stream instead).
 */
export interface LeaseOptions {
  /** 1-255 bytes; who holds the leases, checked on every fenced call. */
  readonly workerId: string;
  /** Kind prefixes; omitted or empty takes every kind but `system:` ones, which only a `system:` prefix takes. */
  readonly kinds?: readonly string[];
  /** Jobs at most, 1-1,000. Default 1. */
  readonly limit?: number;
  /** Long-poll: wait up to this long for a job (capped by the server). */
  readonly waitMs?: number;
  /** Workers lease across every scope when omitted; a tenant token leases in its own. */
  readonly scope?: QueueScope;
  /** Cancels the call: it rejects (gRPC `CANCELLED`), and the server stops waiting for work for it. */
  readonly signal?: AbortSignal;
}

interface CallOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

const Stub = grpc.makeGenericClientConstructor(queueServiceDefinition, 'QueueService');

/** An `enqueue` call waiting for this turn's flush. */
interface QueuedEnqueue {
  readonly job: NewJob;
  readonly signal: AbortSignal | undefined;
  resolve(outcome: EnqueueResult<RemoteJob>): void;
  reject(error: Error): void;
}

/** Per-call options of `enqueue` and `enqueueBatch`. */
export interface EnqueueCallOptions {
  /**
   * Cancels the call: it rejects at once (`unavailable`, from gRPC `CANCELLED`). A call not yet
   * sent sends nothing; a job already sent may still be enqueued, as with any call whose answer
   * is not awaited.
   */
  readonly signal?: AbortSignal;
}

/**
 * A connection to `telha serve`, for producers, operators and tools: enqueue (calls made in one
 * event-loop turn travel together), read, retry, cancel, schedules, pauses, `watch` and `result`,
 * and the fenced calls a hand-written worker makes. Workers usually use `Worker`, which holds one
 * of these. `close()` when done.
 */
/** What a backup wrote (`TelhaClient.backup`); times in microseconds. */
/** A blocked ordered key, as `blockedKeys` answers it. */
export interface RemoteBlockedKey {
  /** `null` for the system scope. */
  readonly tenant: string | null;
  readonly orderKey: string;
  /** The dead job holding the key; `null` when its record is gone (pruned). */
  readonly head: RemoteJob | null;
  /** Jobs waiting behind it. */
  readonly waiting: number;
}

export interface BackupResult {
  readonly path: string;
  readonly jobs: number;
  readonly rows: number;
  readonly pauseMicros: number;
  readonly durationMicros: number;
}

export class TelhaClient {
  /** The server's `host:port`, as given (or the default). */
  readonly address: string;
  private readonly stub: grpc.Client;
  private readonly metadata: grpc.Metadata;
  private readonly timeoutMs: number;
  /** Enqueues travel on a Produce stream; `null` when `produceStream` is off. */
  private readonly producer: ProduceChannel | null;
  /** `enqueue` calls of this event-loop turn, by scope, sent together when the turn ends. */
  private readonly queuedEnqueues = new Map<string, { scope: Scope | undefined; calls: QueuedEnqueue[] }>();

  constructor(options: ClientOptions = {}) {
    const credentials = options.tls
      ? grpc.credentials.createSsl(options.ca ?? null)
      : grpc.credentials.createInsecure();
    this.address = options.address ?? DEFAULT_ADDRESS;
    this.stub = new Stub(this.address, credentials, {
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      // Each client has its own connection: grpc-js otherwise shares one per address across
      // clients, and a new client would inherit another's reconnect backoff after a server restart.
      'grpc.use_local_subchannel_pool': 1,
      // Reconnect quickly when a restarted server comes back.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2_000,
    });
    this.metadata = new grpc.Metadata();
    if (options.token !== undefined) this.metadata.set('authorization', `Bearer ${options.token}`);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.producer =
      options.produceStream === false
        ? null
        : new ProduceChannel({
            open: (waitForReady) => {
              const metadata = this.metadata.clone();
              metadata.setOptions({ waitForReady });
              return (
                this.stub as unknown as {
                  produce(metadata: grpc.Metadata): grpc.ClientDuplexStream<ProduceRequest, ProduceResponse>;
                }
              ).produce(metadata);
            },
            unary: (method, request, callOptions) => this.rpc(method, request, callOptions),
          });
  }

  /**
   * Resolves once a connection to the server is up (connecting now if need be), for a program
   * that starts before its server. Rejects with an `unavailable` error naming the address if
   * none is within `timeoutMs` (default 30 s).
   */
  waitForReady(options: { readonly timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    return new Promise<void>((resolve, reject) => {
      this.stub.waitForReady(Date.now() + timeoutMs, (error) => {
        if (error === undefined || error === null) resolve();
        else {
          reject(
            new TelhaError(
              ErrorCode.Unavailable,
              `cannot reach a Telha server at ${this.address} within ${timeoutMs} ms (${error.message})`,
              { cause: error },
            ),
          );
        }
      });
    });
  }

  /** Close the connection. Calls in flight fail. */
  close(): void {
    this.results.close();
    this.producer?.close();
    this.stub.close();
  }

  /** An enqueue call: on the Produce stream, or unary. */
  private produce<K extends ProduceMethod>(
    method: K,
    request: RequestInitOf<K>,
    signal?: AbortSignal,
  ): Promise<ResponseOf<K>> {
    const options = { timeoutMs: this.timeoutMs, signal };
    if (this.producer === null) return this.rpc(method, request, options);
    return this.producer.call(method, requestOf(method, request), options);
  }

  private rpc<K extends MethodName>(
    method: K,
    request: RequestInitOf<K>,
    options?: Partial<CallOptions>,
  ): Promise<ResponseOf<K>> {
    const timeoutMs = options?.timeoutMs ?? this.timeoutMs;
    const signal = options?.signal;
    return new Promise<ResponseOf<K>>((resolve, reject) => {
      if (signal?.aborted) {
        reject(cancelledError());
        return;
      }
      const fn = (this.stub as unknown as Record<string, ((...args: unknown[]) => grpc.ClientUnaryCall) | undefined>)[
        method
      ];
      if (fn === undefined) throw new Error(`unknown method ${method}`);
      const call = fn.call(
        this.stub,
        requestOf(method, request),
        this.metadata,
        { deadline: Date.now() + timeoutMs },
        (error: grpc.ServiceError | null, response: unknown) => {
          signal?.removeEventListener('abort', cancel);
          if (error) reject(fromWireError(new WireError(error.code, error.details, error.metadata)));
          else resolve(response as ResponseOf<K>);
        },
      );
      const cancel = (): void => call.cancel();
      signal?.addEventListener('abort', cancel, { once: true });
    });
  }

  /**
   * Enqueue one job. With a repeated idempotency key, the first job comes back with `created: false`.
   *
   * Calls made in the same event-loop turn (a web server's concurrent requests, a loop of
   * un-awaited enqueues) go to the server together as one `EnqueueEach` call per scope: each
   * job is still validated and answered on its own, so one bad job fails only its own call.
   *
   * With an OpenTelemetry SDK registered, the call is an `enqueue` span whose context the job
   * carries (unless it sets `traceContext` itself), so the worker's attempt joins the trace.
   */
  enqueue(job: NewJobInit, scope?: QueueScope, options: EnqueueCallOptions = {}): Promise<EnqueueResult<RemoteJob>> {
    return tracedEnqueue(
      [job],
      ([traced]) => this.enqueueUntraced(traced ?? job, scope, options),
      (result) => result.job.jobId,
    );
  }

  private enqueueUntraced(
    job: NewJobInit,
    scope: QueueScope | undefined,
    options: EnqueueCallOptions,
  ): Promise<EnqueueResult<RemoteJob>> {
    return new Promise<EnqueueResult<RemoteJob>>((resolve, reject) => {
      const { signal } = options;
      if (signal?.aborted) {
        reject(cancelledError());
        return;
      }
      const key = scope === undefined ? '' : scope.type === 'system' ? 'system' : `tenant:${scope.tenant}`;
      let group = this.queuedEnqueues.get(key);
      if (group === undefined) {
        if (this.queuedEnqueues.size === 0) setImmediate(() => this.flushEnqueues());
        group = { scope: scopeToWire(scope), calls: [] };
        this.queuedEnqueues.set(key, group);
      }
      const wire = newJobToWire(job);
      if (signal === undefined) {
        group.calls.push({ job: wire, signal, resolve, reject });
        return;
      }
      const onAbort = (): void => reject(cancelledError());
      signal.addEventListener('abort', onAbort, { once: true });
      group.calls.push({
        job: wire,
        signal,
        resolve: (outcome) => {
          signal.removeEventListener('abort', onAbort);
          resolve(outcome);
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      });
    });
  }

  private flushEnqueues(): void {
    const groups = [...this.queuedEnqueues.values()];
    this.queuedEnqueues.clear();
    for (const group of groups) {
      const { scope } = group;
      // A call cancelled before its turn ended is not sent.
      const calls = group.calls.filter((call) => call.signal?.aborted !== true);
      for (let start = 0; start < calls.length; start += MAX_SETTLE_BATCH) {
        const chunk = calls.slice(start, start + MAX_SETTLE_BATCH);
        const only = chunk.length === 1 ? chunk[0] : undefined;
        if (only !== undefined) {
          this.produce('enqueue', { scope, job: only.job }, only.signal).then(
            (res) => answer(only, res.result),
            (error: unknown) => only.reject(error as Error),
          );
          continue;
        }
        this.produce('enqueueEach', { scope, jobs: chunk.map((call) => call.job) }).then(
          (res) =>
            chunk.forEach((call, i) => {
              const reply = res.answers[i]?.answer;
              if (reply?.case === 'result') answer(call, reply.value);
              else if (reply?.case === 'error' && reply.value.code !== 0)
                call.reject(outcomeToError(reply.value, '') as Error);
              else call.reject(new Error('server sent no answer for this job'));
            }),
          (error: unknown) => {
            for (const call of chunk) call.reject(error as Error);
          },
        );
      }
    }
  }

  /** Enqueue many jobs in one atomic write (one `enqueue` span for the batch when traced). */
  enqueueBatch(
    jobs: readonly NewJobInit[],
    scope?: QueueScope,
    options: EnqueueCallOptions = {},
  ): Promise<EnqueueResult<RemoteJob>[]> {
    return tracedEnqueue(
      jobs,
      async (traced) => {
        const res = await this.produce(
          'enqueueBatch',
          { scope: scopeToWire(scope), jobs: traced.map((job, i) => newJobToWire(job, `jobs[${i}].`)) },
          options.signal,
        );
        return res.results.map((r) => ({ job: jobFromWire(requireJob(r.job)), created: r.created }));
      },
      (results) => results[0]?.job.jobId ?? null,
    );
  }

  async show(jobId: string): Promise<RemoteJob> {
    const res = await this.rpc('show', { jobId });
    return jobFromWire(requireJob(res.job));
  }

  async list(params: ListOptions = {}): Promise<ListPage<RemoteJob>> {
    const res = await this.rpc('list', {
      scope: scopeToWire(params.scope),
      ...(params.state === undefined ? {} : { state: stateToWire(params.state) }),
      kindPrefix: params.kindPrefix ?? '',
      limit: checkWireInteger('limit', params.limit ?? 0, 'uint32'),
      pageToken: params.pageToken ?? '',
      order: listOrderToWire(params.order),
      includeSystem: params.includeSystem ?? false,
    });
    return { jobs: res.jobs.map(jobFromWire), nextPageToken: res.nextPageToken === '' ? null : res.nextPageToken };
  }

  async counts(scope?: QueueScope): Promise<CountRow[]> {
    const res = await this.rpc('counts', { scope: scopeToWire(scope) });
    return res.rows.map((r) => ({
      state: stateFromWire(r.state) ?? JobStateCore.Pending,
      kind: r.kind,
      count: Number(r.count),
    }));
  }

  /** Operator: move a Dead or Cancelled job back to Pending with its attempts reset. */
  async retry(jobId: string): Promise<RemoteJob> {
    const res = await this.rpc('retry', { jobId });
    return jobFromWire(requireJob(res.job));
  }

  /**
   * Operator, or the owning tenant: cancel a Pending or Leased job. A Leased job's worker
   * learns at its next heartbeat at the latest (a lease conflict with reason `cancelled`).
   */
  async cancel(jobId: string, options: CancelOptions = {}): Promise<RemoteJob> {
    const res = await this.rpc('cancel', {
      jobId,
      ...(options.reason === undefined ? {} : { reason: options.reason }),
    });
    return jobFromWire(requireJob(res.job));
  }

  /**
   * Operator, or the owning tenant: give up on a Dead job. It moves to Cancelled with a
   * `discarded` event and leaves the Dead list; the record stays until retention prunes it.
   */
  async discard(jobId: string, options: CancelOptions = {}): Promise<RemoteJob> {
    const res = await this.rpc('discard', {
      jobId,
      ...(options.reason === undefined ? {} : { reason: options.reason }),
    });
    return jobFromWire(requireJob(res.job));
  }

  /**
   * Operator, or the owning tenant: make a Pending job that waits behind a delay or a backoff
   * ready now, keeping its attempts. Refused (`failed_precondition`) for a job already ready.
   */
  async runNow(jobId: string): Promise<RemoteJob> {
    const res = await this.rpc('runNow', { jobId });
    return jobFromWire(requireJob(res.job));
  }

  /**
   * Ordered keys whose line cannot move on by itself: the first job is dead (policy `block`), or
   * gone (pruned) with jobs waiting. Operators: `scope` or every scope; tenants: their own.
   */
  async blockedKeys(
    options: { readonly scope?: QueueScope; readonly limit?: number } = {},
  ): Promise<RemoteBlockedKey[]> {
    const res = await this.rpc('listBlockedKeys', {
      scope: scopeToWire(options.scope),
      ...(options.limit === undefined ? {} : { limit: options.limit }),
    });
    return res.keys.map((k) => ({
      tenant: k.tenant === '' ? null : k.tenant,
      orderKey: k.orderKey,
      head: k.head === undefined ? null : jobFromWire(k.head),
      waiting: Number(k.waiting),
    }));
  }

  /**
   * Release a blocked ordered key: its dead head leaves the key (it stays dead) and the next job
   * runs; returns that job, or `null` when none waited. `scope` is required for operators.
   */
  async releaseKey(orderKey: string, options: { readonly scope?: QueueScope } = {}): Promise<RemoteJob | null> {
    const res = await this.rpc('releaseKey', { scope: scopeToWire(options.scope), orderKey });
    return res.next === undefined ? null : jobFromWire(res.next);
  }

  /** Cancel every Pending or Leased job matching the filter; returns how many were cancelled. */
  async cancelMatching(options: CancelMatchingOptions = {}): Promise<number> {
    const res = await this.rpc('cancelMatching', {
      scope: scopeToWire(options.scope),
      ...(options.state === undefined ? {} : { state: stateToWire(options.state) }),
      kindPrefix: options.kindPrefix ?? '',
    });
    return Number(res.cancelled);
  }

  // ---- schedules: `scope` is a tenant token's own when omitted; an operator names one ----

  /** Create a schedule: a job enqueued at each due time of a cron expression or an interval. */
  async createSchedule(schedule: NewSchedule, scope?: QueueScope): Promise<Schedule> {
    const res = await this.rpc('createSchedule', { schedule: newScheduleToWire(schedule, scope) });
    return scheduleFromWire(res.schedule);
  }

  /** Change some fields of a schedule; `{ paused: true }` pauses it, `{ paused: false }` resumes it. */
  async updateSchedule(name: string, changes: ScheduleChanges, scope?: QueueScope): Promise<Schedule> {
    const res = await this.rpc('updateSchedule', {
      scope: scopeToWire(scope),
      name,
      ...scheduleChangesToWire(changes),
    });
    return scheduleFromWire(res.schedule);
  }

  async getSchedule(name: string, scope?: QueueScope): Promise<Schedule> {
    const res = await this.rpc('getSchedule', { scope: scopeToWire(scope), name });
    return scheduleFromWire(res.schedule);
  }

  async listSchedules(options: ScheduleListOptions = {}): Promise<SchedulePage> {
    const res = await this.rpc('listSchedules', {
      scope: scopeToWire(options.scope),
      limit: checkWireInteger('limit', options.limit ?? 0, 'uint32'),
      pageToken: options.pageToken ?? '',
    });
    return {
      schedules: res.schedules.map(scheduleFromWire),
      nextPageToken: res.nextPageToken === '' ? null : res.nextPageToken,
    };
  }

  /** Delete a schedule; the jobs it enqueued stay. */
  async deleteSchedule(name: string, scope?: QueueScope): Promise<void> {
    await this.rpc('deleteSchedule', { scope: scopeToWire(scope), name });
  }

  /**
   * Enqueue a schedule's job now, outside its timing: its next due time stays, and a paused
   * schedule stays paused. `created` is false when a run in the same millisecond enqueued it.
   */
  async runSchedule(name: string, scope?: QueueScope): Promise<EnqueueResult<RemoteJob>> {
    const res = await this.rpc('runSchedule', { scope: scopeToWire(scope), name });
    return { job: jobFromWire(requireJob(res.job)), created: res.created };
  }

  // ---- worker calls ----

  /** Lease up to `limit` jobs, waiting up to `waitMs` for one. */
  async lease(params: LeaseOptions): Promise<RemoteJob[]> {
    const waitMs = checkWireInteger('wait_ms', params.waitMs ?? 0, 'uint32');
    const res = await this.rpc(
      'lease',
      {
        workerId: params.workerId,
        kinds: [...(params.kinds ?? [])],
        limit: checkWireInteger('limit', params.limit ?? 1, 'uint32'),
        waitMs,
        scope: scopeToWire(params.scope),
      },
      { timeoutMs: this.timeoutMs + waitMs, ...(params.signal ? { signal: params.signal } : {}) },
    );
    return res.jobs.map(jobFromWire);
  }

  /**
   * Open a Work stream: the server pushes leased jobs up to the credit granted
   * and answers results sent on it. What {@link Worker} runs on.
   */
  work(params: Omit<LeaseOptions, 'limit' | 'waitMs' | 'signal'>, events: WorkSessionEvents<RemoteJob>): WorkChannel {
    const open = create(WorkOpenSchema, {
      workerId: params.workerId,
      kinds: [...(params.kinds ?? [])],
      scope: scopeToWire(params.scope),
      // WorkChannel.receive reads a message's jobs and its answer alike.
      jobsWithAnswers: true,
    });
    const call = (
      this.stub as unknown as {
        work(metadata: grpc.Metadata): grpc.ClientDuplexStream<WorkRequest, WorkResponse>;
      }
    ).work(this.metadata);
    return new WorkChannel(call, open, events);
  }

  /**
   * Extend a lease; returns the new deadline (µs). With `progress` (JSON text, at most 4,096
   * characters) the job also shows it as its progress until it is leased again.
   */
  async heartbeat(jobId: string, fence: LeaseFence, options: { readonly progress?: string } = {}): Promise<number> {
    const res = await this.rpc('heartbeat', heartbeatToWire({ jobId, fence, ...options }));
    return Number(res.leaseDeadlineUs);
  }

  async checkpoint(jobId: string, fence: LeaseFence, continuation: Uint8Array): Promise<number> {
    const res = await this.rpc('checkpoint', checkpointToWire({ jobId, fence, continuation }));
    return Number(res.leaseDeadlineUs);
  }

  /**
   * Complete a leased job, optionally storing a `result` (at most `jobs.max_result_bytes`) and
   * enqueueing successors, all in the same fenced write.
   */
  async complete(
    jobId: string,
    fence: LeaseFence,
    options: { readonly successors?: readonly NewJobInit[]; readonly result?: Uint8Array } = {},
  ): Promise<{ job: RemoteJob; successors: EnqueueResult<RemoteJob>[] }> {
    const res = await this.rpc('complete', completeToWire({ jobId, fence, ...options }));
    return {
      job: jobFromWire(requireJob(res.job)),
      successors: res.successors.map((r) => ({ job: jobFromWire(requireJob(r.job)), created: r.created })),
    };
  }

  /** Fail a leased job: retried with backoff, or dead-lettered when `permanent` or out of attempts. */
  async fail(
    jobId: string,
    fence: LeaseFence,
    options: { readonly error: string; readonly permanent?: boolean },
  ): Promise<RemoteJob> {
    const res = await this.rpc('fail', failToWire({ jobId, fence, ...options }));
    return jobFromWire(requireJob(res.job));
  }

  /**
   * Hand back a leased job that was not finished: pending and leasable at once,
   * with no attempt charged. What a {@link Worker} does with the jobs it has
   * not started when it closes.
   */
  async release(jobId: string, fence: LeaseFence): Promise<RemoteJob> {
    const res = await this.rpc('release', releaseToWire({ jobId, fence }));
    return jobFromWire(requireJob(res.job));
  }

  /**
   * Complete many leased jobs in one round trip. Each is fenced and applied
   * on its own; the results hold, in order, each item's acceptance or the
   * error its single call would have thrown.
   */
  async completeEach(
    items: readonly {
      jobId: string;
      fence: LeaseFence;
      successors?: readonly NewJobInit[];
      result?: Uint8Array;
    }[],
  ): Promise<ItemResult<null>[]> {
    const res = await this.rpc('completeEach', { items: items.map(completeToWire) });
    return outcomesToResults(res.outcomes, items);
  }

  /** Fail many leased jobs in one round trip, item by item like {@link TelhaClient.completeEach}. */
  async failEach(
    items: readonly { jobId: string; fence: LeaseFence; error: string; permanent?: boolean }[],
  ): Promise<ItemResult<null>[]> {
    const res = await this.rpc('failEach', { items: items.map(failToWire) });
    return outcomesToResults(res.outcomes, items);
  }

  /** Hand back many leased jobs in one round trip, item by item like {@link TelhaClient.completeEach}. */
  async releaseEach(items: readonly { jobId: string; fence: LeaseFence }[]): Promise<ItemResult<null>[]> {
    const res = await this.rpc('releaseEach', { items: items.map(releaseToWire) });
    return outcomesToResults(res.outcomes, items);
  }

  // ---- pauses ----

  /**
   * Pause a kind prefix: its Pending jobs are not leased until {@link TelhaClient.resume}.
   * The scope defaults to the token's own; operators name one, or `'everywhere'`.
   */
  async pause(kindPrefix: string, scope?: PauseScope): Promise<Pause> {
    const res = await this.rpc('pauseKinds', pauseRequest(kindPrefix, scope));
    return pauseFromWire(res.pause);
  }

  /** Resume a paused prefix; `not_found` when it is not paused there. */
  async resume(kindPrefix: string, scope?: PauseScope): Promise<void> {
    await this.rpc('resumeKinds', pauseRequest(kindPrefix, scope));
  }

  /** A scope's pauses and those everywhere; with no scope, an operator sees every pause. */
  async pauses(scope?: QueueScope): Promise<Pause[]> {
    const res = await this.rpc('listPauses', { scope: scopeToWire(scope) });
    return res.pauses.map(pauseFromWire);
  }

  // ---- kind limits (operators) ----

  /**
   * Limit a kind prefix everywhere: at most `concurrency` of its jobs leased at once, at most
   * `rate` leases per period (`"100/s"`, `"10/1m"`, or `{ count, periodMs }`; a token bucket whose
   * burst is the count). Replaces the prefix's limit. Operators only; `invalid_argument` naming
   * the field for a bad value or neither bound, `failed_precondition` past 100 limits.
   */
  async setKindLimit(
    kindPrefix: string,
    limit: { readonly concurrency?: number | null; readonly rate?: Rate | string | null },
  ): Promise<KindLimitStatus> {
    const rate = limit.rate ?? null;
    const res = await this.rpc('setKindLimit', {
      kindPrefix,
      ...(limit.concurrency === undefined || limit.concurrency === null
        ? {}
        : { concurrency: checkWireInteger('concurrency', limit.concurrency, 'uint32') }),
      ...(rate === null ? {} : { rate: typeof rate === 'string' ? rate : formatRate(rate) }),
    });
    return kindLimitFromWire(res.limit);
  }

  /** Remove a prefix's limit; `not_found` when it has none. Operators only. */
  async clearKindLimit(kindPrefix: string): Promise<void> {
    await this.rpc('clearKindLimit', { kindPrefix });
  }

  /** Every kind limit by prefix, with its lane's leased jobs and whole tokens now. Operators only. */
  async kindLimits(): Promise<KindLimitStatus[]> {
    const res = await this.rpc('listKindLimits', {});
    return res.limits.map(kindLimitFromWire);
  }

  // ---- tenant limits (operators) ----

  /**
   * Limit a tenant everywhere: at most `concurrency` of its jobs leased at once, at most `rate`
   * leases per period, and its `weight` (1-1,000, default 1) in the fleet's fair order. Replaces
   * the tenant's limit. Operators only; `invalid_argument` naming the field.
   */
  async setTenantLimit(
    tenant: string,
    limit: {
      readonly concurrency?: number | null;
      readonly rate?: Rate | string | null;
      readonly weight?: number;
    },
  ): Promise<TenantLimitStatus> {
    const rate = limit.rate ?? null;
    const res = await this.rpc('setTenantLimit', {
      tenant,
      ...(limit.concurrency === undefined || limit.concurrency === null
        ? {}
        : { concurrency: checkWireInteger('concurrency', limit.concurrency, 'uint32') }),
      ...(rate === null ? {} : { rate: typeof rate === 'string' ? rate : formatRate(rate) }),
      ...(limit.weight === undefined ? {} : { weight: checkWireInteger('weight', limit.weight, 'uint32') }),
    });
    return tenantLimitFromWire(res.limit);
  }

  /** Remove a tenant's limit; `not_found` when it has none. Operators only. */
  async clearTenantLimit(tenant: string): Promise<void> {
    await this.rpc('clearTenantLimit', { tenant });
  }

  /** Every tenant limit by tenant, with its leased jobs and whole tokens now. Operators only. */
  async tenantLimits(): Promise<TenantLimitStatus[]> {
    const res = await this.rpc('listTenantLimits', {});
    return res.limits.map(tenantLimitFromWire);
  }

  /**
   * Copy the server's RocksDB store to `path`, an absolute path on the server's machine that does
   * not exist yet, while it keeps serving. Operators only. A big store takes a while to copy, so
   * the call waits up to `timeoutMs` (default an hour), not the client's per-call timeout.
   */
  async backup(path: string, options: { readonly timeoutMs?: number } = {}): Promise<BackupResult> {
    const res = await this.rpc('backup', { path }, { timeoutMs: options.timeoutMs ?? 3_600_000 });
    return {
      path: res.path,
      jobs: Number(res.jobs),
      rows: Number(res.rows),
      pauseMicros: Number(res.pauseUs),
      durationMicros: Number(res.durationUs),
    };
  }

  // ---- watch: job transitions as they happen ----

  /**
   * The transitions of jobs in a scope (of a kind prefix, or of one job) as the server commits
   * them, from now or after `resumeToken`. Reconnects by itself, with the last event's token,
   * when the connection drops or the server restarts; a token works on any server sharing the
   * store, for as long as its transitions log keeps the events after it (`watch.retain_secs`,
   * default 24 h, and `watch.retain_events`). Past that it throws `failed_precondition`: read
   * the jobs with `show` or `list`, then watch again. Ends when `signal` aborts or the loop breaks.
   */
  async *watch(options: WatchOptions = {}): AsyncGenerator<WatchEvent, void> {
    for await (const batch of watchBatches(this.openWatch, options)) yield* batch.events;
  }

  /**
   * A job's outcome, without polling: resolves with its result once it is Completed; rejects with
   * a {@link JobFailedError} carrying its last failure once it is Dead (or Cancelled), or with
   * `unavailable` after `timeoutMs` (default: no limit) or when `signal` aborts. Every waiting
   * `result` of a client shares one Watch stream of outcomes, opened with the first and ended with
   * the last; each reads its job once that stream is positioned, so a completion between the two
   * is not missed.
   */
  async result(
    jobId: string,
    options: { readonly timeoutMs?: number; readonly signal?: AbortSignal } = {},
  ): Promise<JobResult> {
    const stop = new AbortController();
    const signal = options.signal === undefined ? stop.signal : AbortSignal.any([stop.signal, options.signal]);
    let timedOut = false;
    const timer =
      options.timeoutMs === undefined
        ? null
        : setTimeout(() => {
            timedOut = true;
            stop.abort();
          }, options.timeoutMs);
    try {
      return await this.results.wait(
        jobId,
        signal,
        () =>
          new TelhaError(
            ErrorCode.Unavailable,
            timedOut
              ? `job ${jobId} has no outcome after ${options.timeoutMs} ms`
              : `waiting for job ${jobId} was cancelled`,
          ),
      );
    } finally {
      if (timer !== null) clearTimeout(timer);
    }
  }

  /** Call `listener` for each job that completes (in `options`' scope and kind prefix), until the returned function is called. */
  onCompleted(listener: (event: WatchEvent) => void, options: WatchListenerOptions = {}): () => void {
    return this.onTransition('completed', listener, options);
  }

  /** Call `listener` for each failed attempt (the job is retried, or dead-lettered next), until the returned function is called. */
  onFailed(listener: (event: WatchEvent) => void, options: WatchListenerOptions = {}): () => void {
    return this.onTransition('failed', listener, options);
  }

  /** Call `listener` for each job that goes Dead, until the returned function is called. */
  onDead(listener: (event: WatchEvent) => void, options: WatchListenerOptions = {}): () => void {
    return this.onTransition('dead', listener, options);
  }

  private onTransition(
    transition: string,
    listener: (event: WatchEvent) => void,
    options: WatchListenerOptions,
  ): () => void {
    const stop = new AbortController();
    void (async () => {
      try {
        for await (const event of this.watch({ ...options, signal: stop.signal })) {
          if (event.transition === transition) listener(event);
        }
      } catch (error) {
        options.onError?.(error as Error);
      }
    })();
    return () => stop.abort();
  }

  private readonly openWatch: WatchTransport = {
    open: (request) =>
      (
        this.stub as unknown as {
          watch(request: WatchRequest, metadata: grpc.Metadata): grpc.ClientReadableStream<WatchResponse>;
        }
      ).watch(request, this.metadata),
    ready: () => this.waitForReady(),
  };

  /** The one Watch stream every waiting `result` shares. */
  private readonly results = new ResultFollower(this.openWatch, (jobId) => this.show(jobId));
}

/** Options of `onCompleted`, `onFailed`, `onDead`. */
export interface WatchListenerOptions extends Omit<WatchOptions, 'signal' | 'jobId'> {
  /** The watch ended with an error (not called on unsubscribe). */
  readonly onError?: (error: Error) => void;
}

function enqueueOutcome(result: WireEnqueueResult | undefined): EnqueueResult<RemoteJob> {
  if (!result?.job) throw new Error('server sent an empty enqueue result');
  return { job: jobFromWire(result.job), created: result.created };
}

/** Answer a queued enqueue with its result, or with the error reading it threw. */
function answer(call: QueuedEnqueue, result: WireEnqueueResult | undefined): void {
  try {
    call.resolve(enqueueOutcome(result));
  } catch (error) {
    call.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

function requireJob<T>(job: T | undefined): T {
  if (job === undefined) throw new Error('server sent a response without its job');
  return job;
}

function pauseRequest(
  kindPrefix: string,
  scope: PauseScope | undefined,
): { kindPrefix: string; everywhere: boolean; scope: ReturnType<typeof scopeToWire> } {
  return scope === 'everywhere'
    ? { kindPrefix, everywhere: true, scope: undefined }
    : { kindPrefix, everywhere: false, scope: scopeToWire(scope) };
}
