/**
 * What `client.result` waits on: one Watch stream that every waiting `result` of a client shares,
 * following the outcomes in the log (transitions that leave a job Completed, Dead or Cancelled)
 * across all the client may see (a tenant token its own scope, an operator every scope), and
 * settling each waiter whose job's outcome arrives.
 *
 * One stream, not one per waiter: each stream is one more read of the log on every commit on the
 * server and one more parked call against its budget, so waiting grew with the waiters. The
 * numbers are in bench/RESULTS.md, "client.result with many waiters".
 *
 * The stream opens with the first waiter and ends when the last one goes. A dropped connection or
 * a restarted server is resumed with its token (`watchBatches`), so no outcome committed meanwhile
 * is missed. A waiter reads its job once the stream is positioned: an outcome committed before
 * that read is in what it reads, one committed after is on the stream.
 */
import { ErrorCode, TelhaError } from '../core/errors.ts';
import { JobState } from '../core/types.ts';
import type { RemoteJob } from './convert.ts';
import { outcomeOf, watchBatches, type JobResult, type WatchEvent, type WatchTransport } from './watch.ts';

/** The states a job's outcome leaves it in: all the stream asks the server for. */
const OUTCOME_STATES: readonly JobState[] = [JobState.Completed, JobState.Dead, JobState.Cancelled];

/** One `result` call waiting: settled once, by the stream, by its own read of the job, or by its signal. */
class Waiter {
  readonly promise: Promise<JobResult>;
  resolve!: (result: JobResult) => void;
  reject!: (error: unknown) => void;

  constructor(readonly jobId: string) {
    this.promise = new Promise<JobResult>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** Settle with the job's outcome if it has one (a Dead or Cancelled job rejects). */
  settleWith(job: RemoteJob): void {
    try {
      const outcome = outcomeOf(job);
      if (outcome !== null) this.resolve(outcome);
    } catch (error) {
      this.reject(error);
    }
  }
}

/** The one stream and the promise that resolves once the server has opened it. */
interface Follower {
  readonly stop: AbortController;
  readonly opened: Promise<void>;
}

export class ResultFollower {
  /** The waiters by job id: several `result` calls may wait for one job. */
  private readonly waiters = new Map<string, Set<Waiter>>();
  private follower: Follower | null = null;

  constructor(
    private readonly transport: WatchTransport,
    /** Reads a job: a waiter's first look, and a completion whose result was too big for its event. */
    private readonly show: (jobId: string) => Promise<RemoteJob>,
  ) {}

  /** Resolves with the job's outcome; rejects with the stream's error, the job's read's, or `cancelled()` when `signal` aborts. */
  async wait(jobId: string, signal: AbortSignal, cancelled: () => Error): Promise<JobResult> {
    if (signal.aborted) throw cancelled();
    const waiter = new Waiter(jobId);
    const abort = (): void => waiter.reject(cancelled());
    signal.addEventListener('abort', abort, { once: true });
    const same = this.waiters.get(jobId);
    if (same === undefined) this.waiters.set(jobId, new Set([waiter]));
    else same.add(waiter);
    const follower = this.follower ?? this.start();
    // Once the stream is positioned, whatever the read misses is on the stream.
    follower.opened.then(
      () => this.show(jobId).then((job) => waiter.settleWith(job), waiter.reject),
      () => undefined,
    );
    try {
      return await waiter.promise;
    } finally {
      signal.removeEventListener('abort', abort);
      this.remove(waiter);
    }
  }

  /** End the stream and reject every waiter: the client is closing. */
  close(): void {
    this.end(new TelhaError(ErrorCode.Unavailable, 'the client was closed while waiting for a result'));
  }

  private remove(waiter: Waiter): void {
    const same = this.waiters.get(waiter.jobId);
    if (same?.delete(waiter) !== true || same.size > 0) return;
    this.waiters.delete(waiter.jobId);
    if (this.waiters.size === 0) {
      this.follower?.stop.abort();
      this.follower = null;
    }
  }

  /** Stop following and reject every waiter with `error`; the next waiter starts a stream again. */
  private end(error: Error): void {
    this.follower?.stop.abort();
    this.follower = null;
    for (const same of this.waiters.values()) for (const waiter of same) waiter.reject(error);
  }

  private start(): Follower {
    const stop = new AbortController();
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    const follower: Follower = { stop, opened };
    this.follower = follower;
    void (async () => {
      let failure: Error;
      try {
        const batches = watchBatches(this.transport, { states: OUTCOME_STATES, signal: stop.signal, onOpen: open });
        for await (const batch of batches) for (const event of batch.events) this.settle(event);
        failure = new TelhaError(ErrorCode.Unavailable, 'the server ended the watch that results wait on');
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error));
      }
      if (!stop.signal.aborted && this.follower === follower) this.end(failure);
    })();
    return follower;
  }

  /** An outcome from the stream: settle the job's waiters, if it has any. */
  private settle({ job, resultBytes }: WatchEvent): void {
    const same = this.waiters.get(job.jobId);
    if (same === undefined) return;
    const settle = (settled: RemoteJob): void => {
      for (const waiter of same) waiter.settleWith(settled);
    };
    // An event carries a result of at most 1 KiB (the server's log stays small); a completion
    // whose event has none and does not say it had none (`resultBytes` 0) may have a bigger one:
    // read the job itself. Without the mark, 1,000 completions in one commit cost 1,000 reads
    // (bench/RESULTS.md, "client.result with many waiters").
    if (job.state === JobState.Completed && job.result === null && resultBytes !== 0) {
      this.show(job.jobId).then(settle, (error: unknown) => {
        for (const waiter of same) waiter.reject(error);
      });
    } else {
      settle(job);
    }
  }
}
