/**
 * The client end of a Work stream: grant credit, receive leased jobs, send
 * results and lease extensions (heartbeats, progress, checkpoints) and get
 * each one's outcome. Everything the worker has to say in one event-loop turn
 * (freed slots, finished results, heartbeats) goes out as one message; they
 * are pipelined, several messages may await answers at once.
 */
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { ErrorCode, TelhaError } from '../core/errors.ts';
import { MAX_SETTLE_BATCH } from '../core/bounds.ts';
import { WorkRequestSchema, type WorkOpen, type WorkRequest, type WorkResponse } from '../gen/telha/v1/queue_pb.ts';
import type { LeaseItem, SettleItem, WorkSession, WorkSessionEvents } from '../worker/source.ts';
import {
  checkpointToWire,
  completeToWire,
  failToWire,
  heartbeatToWire,
  jobFromWire,
  releaseToWire,
  type RemoteJob,
} from './convert.ts';
import { fromWireError, outcomesToResults, outcomeToError, WireError } from './errors.ts';
import { itemFailed, itemOk } from '../core/types.ts';
import { WORK_OPEN_HEADER } from '../wire/service.ts';
import { answerEach, splitByType, type PendingResult, type ResultsByType } from '../worker/pending.ts';

type LeaseItemOf<T extends LeaseItem['type']> = Extract<LeaseItem, { readonly type: T }>;

/** A lease extension waiting for the server's answer: the lease's new deadline (µs). */
interface PendingExtension<Item extends LeaseItem = LeaseItem> {
  readonly item: Item;
  resolve(deadline: number): void;
  reject(error: Error): void;
}

/** What one message sent and awaits answers to. */
interface Sent extends ResultsByType {
  readonly heartbeats: PendingExtension<LeaseItemOf<'heartbeat'>>[];
  readonly checkpoints: PendingExtension<LeaseItemOf<'checkpoint'>>[];
}

/** A Work stream as the runner's {@link WorkSession}. */
export class WorkChannel implements WorkSession {
  private credit = 0;
  private queued: PendingResult[] = [];
  private extensions: PendingExtension[] = [];
  private flushScheduled = false;
  private opening: WorkOpen | null;
  private nextSettleId = 1n;
  private readonly awaiting = new Map<bigint, Sent>();
  private halfClosed = false;
  private ended = false;

  constructor(
    private readonly call: grpc.ClientDuplexStream<WorkRequest, WorkResponse>,
    open: WorkOpen,
    private readonly events: WorkSessionEvents<RemoteJob>,
  ) {
    this.opening = open;
    call.on('metadata', (headers: grpc.Metadata) => {
      if (headers.get(WORK_OPEN_HEADER)[0] === '1') events.onOpen();
    });
    call.on('data', (message: WorkResponse) => this.receive(message));
    // The status follows the last message; 'error' repeats a failed status (and must have a listener).
    call.on('error', () => {});
    call.on('status', (status: grpc.StatusObject) => {
      const error =
        status.code === grpc.status.OK
          ? null
          : fromWireError(new WireError(status.code, status.details, status.metadata));
      // Let messages already received be delivered first.
      setImmediate(() => this.finish(error));
    });
    this.schedule();
  }

  /** Whether results and credit can still be sent (not half-closed, not ended). */
  get writable(): boolean {
    return !this.halfClosed && !this.ended;
  }

  /** Allow the server to push `n` more jobs. */
  grant(n: number): void {
    if (!this.writable || n <= 0) return;
    this.credit += n;
    this.schedule();
  }

  /** Resolves when the server accepted the result; rejects with this item's error, or Unavailable if the stream ended first. */
  settle(item: SettleItem): Promise<void> {
    return this.send<void>((resolve, reject) => this.queued.push({ item, resolve, reject }));
  }

  /** A heartbeat or checkpoint, sent with this turn's message; resolves with the lease's new deadline (µs). */
  extend(item: LeaseItem): Promise<number> {
    return this.send<number>((resolve, reject) => this.extensions.push({ item, resolve, reject }));
  }

  /** Queue what `add` adds for this turn's message, answered when the server answers it. */
  private send<T>(add: (resolve: (value: T) => void, reject: (error: Error) => void) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (!this.writable) {
        reject(new TelhaError(ErrorCode.Unavailable, 'the work stream is closed'));
        return;
      }
      add(resolve, reject);
      this.schedule();
    });
  }

  /** Send what is queued, then half-close: the server answers the results it has and ends the stream. */
  end(): void {
    if (!this.writable) return;
    this.flush();
    this.halfClosed = true;
    this.call.end();
  }

  /** Drop the stream at once (results awaiting answers are rejected). */
  cancel(): void {
    this.call.cancel();
  }

  private schedule(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // Everything that happens in this turn (finished handlers, freed slots) joins one message.
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (!this.writable) return;
    if (this.queued.length === 0 && this.extensions.length === 0 && this.credit === 0 && this.opening === null) return;
    do {
      const batch = this.queued.splice(0, MAX_SETTLE_BATCH);
      const extensions = this.extensions.splice(0, MAX_SETTLE_BATCH);
      const sent: Sent = {
        ...splitByType(batch),
        heartbeats: extensions.filter(
          (e): e is PendingExtension<LeaseItemOf<'heartbeat'>> => e.item.type === 'heartbeat',
        ),
        checkpoints: extensions.filter(
          (e): e is PendingExtension<LeaseItemOf<'checkpoint'>> => e.item.type === 'checkpoint',
        ),
      };
      const awaited = batch.length + extensions.length > 0;
      const settleId = awaited ? this.nextSettleId++ : 0n;
      if (awaited) this.awaiting.set(settleId, sent);
      const message = create(WorkRequestSchema, {
        ...(this.opening === null ? {} : { open: this.opening }),
        credit: this.credit,
        settleId,
        completes: sent.completes.map(({ item }) => completeToWire(item)),
        fails: sent.fails.map(({ item }) => failToWire(item)),
        releases: sent.releases.map(({ item }) => releaseToWire(item)),
        heartbeats: sent.heartbeats.map(({ item }) => heartbeatToWire(item)),
        checkpoints: sent.checkpoints.map(({ item }) => checkpointToWire(item)),
      });
      this.opening = null;
      this.credit = 0;
      this.call.write(message);
    } while (this.queued.length > 0 || this.extensions.length > 0);
  }

  private receive(message: WorkResponse): void {
    if (message.jobs.length > 0) this.events.onJobs(message.jobs.map(jobFromWire));
    if (message.settleId === 0n) return;
    const batch = this.awaiting.get(message.settleId);
    if (batch === undefined) return;
    this.awaiting.delete(message.settleId);
    const answer = (entries: readonly PendingResult[], outcomes: WorkResponse['completeOutcomes']): void =>
      answerEach(
        entries,
        outcomesToResults(
          outcomes,
          entries.map((e) => e.item),
        ),
      );
    answer(batch.completes, message.completeOutcomes);
    answer(batch.fails, message.failOutcomes);
    answer(batch.releases, message.releaseOutcomes);
    const extended = (entries: readonly PendingExtension[], outcomes: WorkResponse['heartbeatOutcomes']): void =>
      answerEach(
        entries,
        outcomes.map(({ outcome, leaseDeadlineUs }, i) => {
          const error = outcome === undefined ? null : outcomeToError(outcome, entries[i]?.item.jobId ?? '');
          return error === null ? itemOk(Number(leaseDeadlineUs)) : itemFailed(error);
        }),
      );
    extended(batch.heartbeats, message.heartbeatOutcomes);
    extended(batch.checkpoints, message.checkpointOutcomes);
  }

  private finish(error: Error | null): void {
    if (this.ended) return;
    this.ended = true;
    const reason = error ?? new TelhaError(ErrorCode.Unavailable, 'the work stream ended before answering');
    for (const { completes, fails, releases, heartbeats, checkpoints } of this.awaiting.values()) {
      for (const entry of [...completes, ...fails, ...releases, ...heartbeats, ...checkpoints]) entry.reject(reason);
    }
    this.awaiting.clear();
    for (const entry of this.queued.splice(0)) entry.reject(reason);
    for (const entry of this.extensions.splice(0)) entry.reject(reason);
    this.events.onEnd(error);
  }
}
