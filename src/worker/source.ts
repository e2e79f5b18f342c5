/**
 * Where a worker's jobs come from and its results go: the seam between the
 * worker runner (`runner.ts`) and a transport. The SDK's source speaks gRPC
 * to `telha serve` (`src/client/`); the embedded one calls a `Queue` in the
 * same process (`src/engine/`). Both give the runner the same session shape:
 * credit in, leased jobs pushed, each result answered on its own.
 */
import type { JobRecord, LeaseFence, NewJob } from '../core/types.ts';

/** A finished job's result, or an unstarted job handed back, on its way to the store. */
export type SettleItem =
  | {
      readonly type: 'complete';
      readonly jobId: string;
      readonly fence: LeaseFence;
      readonly successors: readonly NewJob[];
      /** What the handler returned, as bytes; absent for none. */
      readonly result?: Uint8Array;
    }
  | {
      readonly type: 'fail';
      readonly jobId: string;
      readonly fence: LeaseFence;
      readonly error: string;
      readonly permanent: boolean;
    }
  | {
      readonly type: 'release';
      readonly jobId: string;
      readonly fence: LeaseFence;
    };

/** A lease extension on its way to the store: a heartbeat (carrying progress, if any) or a checkpoint. */
export type LeaseItem =
  | {
      readonly type: 'heartbeat';
      readonly jobId: string;
      readonly fence: LeaseFence;
      /** Progress for people (JSON text). */
      readonly progress?: string;
    }
  | {
      readonly type: 'checkpoint';
      readonly jobId: string;
      readonly fence: LeaseFence;
      readonly continuation: Uint8Array;
    };

export type CompleteItem = Extract<SettleItem, { readonly type: 'complete' }>;
export type FailItem = Extract<SettleItem, { readonly type: 'fail' }>;
export type ReleaseItem = Extract<SettleItem, { readonly type: 'release' }>;

export interface WorkSessionEvents<Job extends JobRecord = JobRecord> {
  /** The source accepted the session (through the server: authenticated and admitted); jobs may follow. */
  onOpen(): void;
  /** Jobs leased to this worker, each counted against the credit granted. */
  onJobs(jobs: Job[]): void;
  /** The session is over: `null` when it ended cleanly, else why it failed. */
  onEnd(error: Error | null): void;
}

/** One open session: the runner grants credit and settles results on it. */
export interface WorkSession {
  /** Whether credit and results can still be sent. */
  readonly writable: boolean;
  /** Allow `n` more jobs to be pushed. */
  grant(n: number): void;
  /** Resolves when the store accepted the result; rejects with this item's error. */
  settle(item: SettleItem): Promise<void>;
  /**
   * A session that carries lease extensions itself (a Work stream: a message, not a call each)
   * has this: resolves with the lease's new deadline (µs), rejects with the item's error, or with
   * `unavailable` when the session ended before answering. Without it they go through the source.
   */
  extend?(item: LeaseItem): Promise<number>;
  /**
   * Stop leasing; answer the results already sent; then end (`onEnd(null)`).
   * Results settled before this call go out before the session stops taking them.
   */
  end(): void;
  /** Drop the session at once. */
  cancel(): void;
}

export interface WorkSource {
  /** Where the jobs come from, for what the worker reports: `the Telha server at 127.0.0.1:7070`. */
  readonly name: string;
  open(
    params: { readonly workerId: string; readonly kinds?: readonly string[] },
    events: WorkSessionEvents,
  ): WorkSession;
  /** Extend a lease, storing `progress` (JSON text) with it when given; the new deadline (µs). */
  heartbeat(jobId: string, fence: LeaseFence, progress?: string): Promise<number>;
  /** Store a continuation and extend the lease; the new deadline (µs). */
  checkpoint(jobId: string, fence: LeaseFence, continuation: Uint8Array): Promise<number>;
  /** Settle a result while no session is open. */
  settle(item: SettleItem): Promise<void>;
  /** Release what the source holds (connections); called once by the runner's close(). */
  close(): void;
}
