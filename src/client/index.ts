/**
 * `telha/client`: what producers, workers and operator tools import. It
 * speaks only the wire protocol and never loads the engine, `pg` or RocksDB.
 */
export { TelhaClient, DEFAULT_ADDRESS } from './client.ts';
export { ORDER_WAIT } from '../core/ordered-keys.ts';
export type {
  BackupResult,
  RemoteBlockedKey,
  CancelMatchingOptions,
  CancelOptions,
  ClientOptions,
  EnqueueCallOptions,
  LeaseOptions,
  ListOptions,
  ScheduleListOptions,
  SchedulePage,
  WatchListenerOptions,
} from './client.ts';
export { JobFailedError } from './watch.ts';
export type { JobResult, WatchEvent, WatchOptions } from './watch.ts';
export type { NewSchedule, Schedule, ScheduleChanges, ScheduleJob, ScheduleJobInput } from '../core/schedules.ts';
export type { Pause, PauseScope } from '../core/pauses.ts';
export type { KindLimit, KindLimitStatus } from '../core/kind-limits.ts';
export type { TenantLimit, TenantLimitStatus } from '../core/tenant-limits.ts';
export type { Rate } from '../core/rate.ts';
export type { Clock } from '../core/clock.ts';
export { Worker, PermanentError, AttemptTimeoutError } from './worker.ts';
export type {
  JobContext,
  JobHandler,
  RunnerOptions,
  TaskHandler,
  WorkerEvents,
  WorkerListener,
  WorkerOptions,
  WorkerRunner,
} from './worker.ts';
export { defineTask, jsonCodec, Task } from './tasks.ts';
export type {
  PayloadCodec,
  TaskEnqueueOptions,
  TaskHandleOptions,
  TaskJob,
  TaskJobHandler,
  TaskOptions,
  TaskProducer,
} from './tasks.ts';
export type { StandardSchemaV1 } from './standard-schema.ts';
export { resultJson } from '../core/results.ts';
export type { RemoteJob } from './convert.ts';
export { silentLogger } from '../core/logger.ts';
export type { Logger } from '../core/logger.ts';
export { ErrorCode, TelhaError, LeaseConflictError, isTelhaError } from '../core/errors.ts';
export type { LeaseConflictReason } from '../core/errors.ts';
export { JobState, JOB_STATE_NAMES, SYSTEM_SCOPE, tenantScope } from '../core/types.ts';
export type {
  CountRow,
  EnqueueResult,
  FailOptions,
  ItemResult,
  JobEvent,
  JobRecord,
  SupersedeMode,
  OrderDeadPolicy,
  TraceContext,
  LeaseFence,
  ListPage,
  NewJob,
  QueueScope,
} from '../core/types.ts';
