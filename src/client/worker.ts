/**
 * The worker SDK: the worker loop (`src/worker/runner.ts`) on a gRPC Work
 * stream to `telha serve`. Results (and the jobs `close()` hands back),
 * heartbeats, progress and checkpoints go on the stream while it is open, and
 * in CompleteEach / FailEach / ReleaseEach, Heartbeat and Checkpoint calls
 * while it is not.
 */
import type { WorkSource } from '../worker/source.ts';
import { WorkerRunner, type RunnerOptions } from '../worker/runner.ts';
import { TelhaClient, type ClientOptions } from './client.ts';
import { defaultWorkerLogger } from './default-logger.ts';
import { Settler } from './settler.ts';

export { AttemptTimeoutError, PermanentError } from '../worker/runner.ts';
export type {
  JobContext,
  JobHandler,
  RunnerOptions,
  TaskHandler,
  WorkerEvents,
  WorkerListener,
  WorkerRunner,
} from '../worker/runner.ts';

/**
 * A `Worker`'s options: where the server is (`address`, `token`, ...), and what to run (a
 * `handler`, or `tasks` with a handler each). `logger` defaults to pino on stderr from info up,
 * at `TELHA_LOG_LEVEL` when set (`silentLogger` silences it).
 */
export interface WorkerOptions extends ClientOptions, RunnerOptions {}

/**
 * A worker on a Telha server: leases the jobs of its kinds (or its tasks') over one Work stream,
 * runs each with its handler under `concurrency` (and each task's own), heartbeats their leases,
 * and sends their results fenced. `start()` it, `close()` it; `on('completed' | 'failed' |
 * 'error', listener)` to follow it.
 */
export class Worker extends WorkerRunner {
  /** The client its work goes through. */
  readonly client: TelhaClient;

  constructor(options: WorkerOptions) {
    const client = new TelhaClient(options);
    super(remoteSource(client), { ...options, logger: options.logger ?? defaultWorkerLogger() });
    this.client = client;
  }
}

function remoteSource(client: TelhaClient): WorkSource {
  const settler = new Settler(client);
  return {
    name: `the Telha server at ${client.address}`,
    open: (params, events) => client.work(params, events),
    heartbeat: (jobId, fence, progress) => client.heartbeat(jobId, fence, progress === undefined ? {} : { progress }),
    checkpoint: (jobId, fence, continuation) => client.checkpoint(jobId, fence, continuation),
    settle: (item) => settler.settle(item),
    close: () => client.close(),
  };
}
