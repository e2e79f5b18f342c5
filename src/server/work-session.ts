/**
 * A worker's Work stream on the server: credit and results come in, leased
 * jobs and the results' outcomes go out, on one stream for as long as the
 * worker runs. Leasing here is the unary Lease call's long-poll, re-armed by
 * the server itself whenever credit remains, so a job enqueued while the
 * worker waits is pushed at once; results are applied exactly as
 * CompleteEach / FailEach / ReleaseEach apply them, and lease extensions as
 * Heartbeat / Checkpoint do.
 *
 * A worker that stops sends back the jobs it has not started (releases) and
 * half-closes. Jobs leased for the stream once it is closing (the worker
 * half-closed or went away, or the server is shutting down) are never pushed:
 * the server releases them itself, so no job waits out a lease nobody holds.
 * Jobs pushed into a stream that breaks before the worker reads them stay
 * leased to it until their lease expires, and the reaper hands them on: the
 * same as a unary Lease response lost on the way.
 */
import { ErrorCode, invalidArgument, TelhaError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { MAX_WORK_CREDIT } from '../core/bounds.ts';
import { ANY_SCOPE, type JobRecord, type ScopeFilter } from '../core/types.ts';
import { checkKindPrefixes, checkWorkerId } from '../core/validate.ts';
import { LeasePump } from '../engine/lease-pump.ts';
import type { Queue } from '../engine/queue.ts';
import type { LeaseOptions } from '../engine/queue-options.ts';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type {
  CheckpointRequest,
  CompleteRequest,
  FailRequest,
  HeartbeatRequest,
  ItemOutcome,
  LeaseOutcome,
  Job,
  ReleaseRequest,
  WorkRequest,
  WorkResponseSchema,
} from '../gen/telha/v1/queue_pb.ts';
import { requirePermission, resolveScope, type Authenticator, type Principal } from '../edge/auth.ts';
import { scopeFromWire } from './convert.ts';
import { UndecodableRequest, type Decoded } from '../wire/service.ts';
import { describeError, type WireStatus } from '../edge/status.ts';

/** What the session needs from the transport. */
export interface WorkStream {
  readonly authorization: string | null;
  /** Aborts when the worker cancels the stream or the connection drops. */
  readonly signal: AbortSignal;
  /** Tell the worker its stream was accepted (response headers), before any job is sent. */
  opened(): void;
  send(message: MessageInitShape<typeof WorkResponseSchema>): void;
  /** End the stream with OK. */
  end(): void;
  /** End the stream with an error status. */
  fail(status: WireStatus): void;
}

/** What the transport feeds the session. */
export interface WorkSession {
  /** A message, or one that did not decode: the stream then ends INVALID_ARGUMENT, as for bad input. */
  receive(message: Decoded<WorkRequest>): void;
  /** The worker half-closed: apply and answer the results it sent, then end. */
  finish(): void;
}

export interface WorkDeps {
  readonly queue: Queue;
  readonly auth: Authenticator;
  readonly logger: Logger;
  readonly maxLeaseWaitMs: number;
  /** Aborts every session when the server shuts down: each ends with OK once its results are answered. */
  readonly shutdown: AbortSignal;
  /** Counts the stream as one parked call (`server.max_parked_calls`); throws RESOURCE_EXHAUSTED over it. Returns the release. */
  admit(): () => void;
  toWire(job: JobRecord): Job;
  completeEach(items: readonly CompleteRequest[], scope: ScopeFilter): Promise<ItemOutcome[]>;
  failEach(items: readonly FailRequest[], scope: ScopeFilter): Promise<ItemOutcome[]>;
  releaseEach(items: readonly ReleaseRequest[], scope: ScopeFilter): Promise<ItemOutcome[]>;
  heartbeatEach(items: readonly HeartbeatRequest[], scope: ScopeFilter): Promise<LeaseOutcome[]>;
  checkpointEach(items: readonly CheckpointRequest[], scope: ScopeFilter): Promise<LeaseOutcome[]>;
}

/** The outcomes of one message's results and lease extensions, under its settle_id. */
interface WorkAnswer {
  readonly settleId: bigint;
  readonly completeOutcomes: ItemOutcome[];
  readonly failOutcomes: ItemOutcome[];
  readonly releaseOutcomes: ItemOutcome[];
  readonly heartbeatOutcomes: LeaseOutcome[];
  readonly checkpointOutcomes: LeaseOutcome[];
}

/**
 * What the session sends. For a worker that opened with `jobs_with_answers`, everything that
 * becomes ready in one turn leaves together: newly leased jobs and the first answer in one
 * message (a worker without prefetch sends a result and its freed slot together, and the
 * completion and the next lease land in one write), each further answer in its own (one
 * settle_id a message). Otherwise each goes at once, as it is ready.
 */
class Outbox {
  private jobs: Job[] = [];
  private answers: WorkAnswer[] = [];
  private scheduled = false;

  constructor(
    private readonly stream: WorkStream,
    private readonly combine: boolean,
  ) {}

  sendJobs(jobs: Job[]): void {
    if (!this.combine) return this.stream.send({ jobs });
    for (const job of jobs) this.jobs.push(job);
    this.schedule();
  }

  sendAnswer(answer: WorkAnswer): void {
    if (!this.combine) return this.stream.send(responseOf([], answer));
    this.answers.push(answer);
    this.schedule();
  }

  /** Send what waits. */
  flush(): void {
    const jobs = this.jobs;
    const answers = this.answers;
    if (jobs.length === 0 && answers.length === 0) return;
    this.jobs = [];
    this.answers = [];
    this.stream.send(responseOf(jobs, answers[0]));
    for (let at = 1; at < answers.length; at++) this.stream.send(responseOf([], answers[at]));
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // A tick runs once the promise continuations queued so far have run: those of every unit a
    // group-commit write resolved, so the lease and the settle it carried both get here first.
    process.nextTick(() => {
      this.scheduled = false;
      if (!this.stream.signal.aborted) this.flush();
    });
  }
}

function responseOf(jobs: Job[], answer: WorkAnswer | undefined): MessageInitShape<typeof WorkResponseSchema> {
  if (answer === undefined) return { jobs };
  return {
    jobs,
    settleId: answer.settleId,
    completeOutcomes: answer.completeOutcomes,
    failOutcomes: answer.failOutcomes,
    releaseOutcomes: answer.releaseOutcomes,
    heartbeatOutcomes: answer.heartbeatOutcomes,
    checkpointOutcomes: answer.checkpointOutcomes,
  };
}

interface Opened {
  readonly principal: Principal;
  readonly leaseScope: ScopeFilter;
  /** Where fenced results may land: a worker or operator settles across scopes (the fence decides). */
  readonly settleScope: ScopeFilter;
  readonly lease: LeaseOptions;
  readonly pump: LeasePump;
  readonly outbox: Outbox;
}

export function openWorkSession(stream: WorkStream, deps: WorkDeps): WorkSession {
  const stop = new AbortController();
  const signal = AbortSignal.any([stream.signal, deps.shutdown, stop.signal]);
  let opened: Opened | null = null;
  let admitted: (() => void) | null = null;
  const settling = new Set<Promise<void>>();
  let closed = false;

  const describe = (error: unknown): WireStatus =>
    describeError(error, deps.logger, {
      method: 'work',
      caller: opened?.principal.name ?? null,
      workerId: opened?.lease.workerId ?? null,
    });

  /** Count `work` in `settling`, which the stream's end waits for. */
  function track(work: Promise<void>): void {
    settling.add(work);
    void work.finally(() => settling.delete(work));
  }

  /**
   * Stop leasing; let a lease call in flight finish (its jobs are released,
   * see `open`); answer the results already received; then end the stream
   * (OK, or `status`).
   */
  function close(status: WireStatus | null): void {
    if (closed) return;
    closed = true;
    stop.abort();
    const leasing = opened?.pump.done.catch(() => undefined) ?? Promise.resolve();
    void leasing
      .then(() => Promise.all(settling))
      .then(() => {
        admitted?.();
        if (stream.signal.aborted) return;
        opened?.outbox.flush();
        if (status === null) stream.end();
        else stream.fail(status);
      });
  }

  /** Release jobs leased for a stream that is closing: no worker will run them. */
  function releaseUnsent(jobs: readonly JobRecord[], workerId: string, scope: ScopeFilter): void {
    const items = jobs.map((job) => ({ jobId: job.jobId, fence: { workerId, leaseGeneration: job.leaseGeneration } }));
    track(
      deps.queue.releaseEach(items, scope).then(
        (results) => {
          results.forEach((result, i) => {
            if (!result.ok)
              deps.logger.warn({ jobId: items[i]?.jobId, err: String(result.error) }, 'could not release');
          });
        },
        // The store is away: the leases expire and the reaper hands the jobs on.
        (error: unknown) => deps.logger.warn({ workerId, err: String(error) }, 'could not release'),
      ),
    );
  }

  function open(message: WorkRequest): Opened {
    if (message.open === undefined) throw invalidArgument('open', 'the first message of a Work stream must carry open');
    admitted = deps.admit();
    const principal = deps.auth.authenticate(stream.authorization);
    requirePermission(principal, 'work');
    const leaseScope = resolveScope(principal, scopeFromWire(message.open.scope), true);
    const lease: LeaseOptions = {
      workerId: checkWorkerId(message.open.workerId, 'open.worker_id'),
      kinds: checkKindPrefixes(message.open.kinds, 'open.kinds') ?? [],
      scope: leaseScope,
    };
    const settleScope = principal.role === 'tenant' ? leaseScope : ANY_SCOPE;
    stream.opened();
    const outbox = new Outbox(stream, message.open.jobsWithAnswers);
    // A lease call that was in flight when the stream began to close still returns its jobs.
    const pump = new LeasePump(deps.queue, lease, deps.maxLeaseWaitMs, signal, (jobs) => {
      if (signal.aborted) releaseUnsent(jobs, lease.workerId, settleScope);
      else outbox.sendJobs(jobs.map((job) => deps.toWire(job)));
    });
    pump.done.then(
      () => close(null),
      (error: unknown) => close(describe(error)),
    );
    deps.logger.debug({ workerId: lease.workerId, caller: principal.name }, 'work stream opened');
    return { principal, leaseScope, settleScope, lease, pump, outbox };
  }

  function settle(settleId: bigint, message: WorkRequest): void {
    const { settleScope: scope, outbox } = opened as Opened;
    track(
      Promise.all([
        deps.completeEach(message.completes, scope),
        deps.failEach(message.fails, scope),
        deps.releaseEach(message.releases, scope),
        deps.heartbeatEach(message.heartbeats, scope),
        deps.checkpointEach(message.checkpoints, scope),
      ]).then(
        ([completeOutcomes, failOutcomes, releaseOutcomes, heartbeatOutcomes, checkpointOutcomes]) => {
          if (stream.signal.aborted) return;
          outbox.sendAnswer({
            settleId,
            completeOutcomes,
            failOutcomes,
            releaseOutcomes,
            heartbeatOutcomes,
            checkpointOutcomes,
          });
        },
        (error: unknown) => close(describe(error)),
      ),
    );
  }

  return {
    receive(message) {
      if (closed) return;
      try {
        if (message instanceof UndecodableRequest) throw message.error;
        if (opened === null) opened = open(message);
        else if (message.open !== undefined) throw invalidArgument('open', 'only the first message may carry open');
        if (message.credit > 0) {
          const credit = opened.pump.outstanding + message.credit;
          if (credit > MAX_WORK_CREDIT) {
            throw invalidArgument('credit', `at most ${MAX_WORK_CREDIT} may be outstanding; ${credit} would be`);
          }
          opened.pump.grant(message.credit);
        }
        const { completes, fails, releases, heartbeats, checkpoints } = message;
        if (completes.length + fails.length + releases.length + heartbeats.length + checkpoints.length > 0) {
          if (message.settleId === 0n) {
            throw invalidArgument('settle_id', 'must be set on a message carrying results or lease extensions');
          }
          settle(message.settleId, message);
        }
      } catch (error) {
        close(describe(error));
      }
    },
    finish() {
      close(
        opened === null
          ? describe(new TelhaError(ErrorCode.InvalidArgument, 'the stream ended before it was opened'))
          : null,
      );
    },
  };
}
