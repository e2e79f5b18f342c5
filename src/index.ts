/**
 * `telha`: the engine a program opens in its own process. Named exports
 * only; types are exported as types. The backends are reached through
 * `openQueue` (which loads the one the configuration names) or their own
 * entries, `telha/rocksdb` and `telha/postgres`.
 */
export { openQueue, openStore, loadConfig } from './open.ts';
export type { OpenQueueOptions } from './open.ts';
export { Queue } from './engine/queue.ts';
export type {
  CancelMatchingOptions,
  CancelOptions,
  CompleteOptions,
  CompleteResult,
  Completion,
  FailOptions,
  Failure,
  HeartbeatOptions,
  LeasedOptions,
  LeaseManyOptions,
  LeaseOptions,
  LeaseWaits,
  ListOptions,
  PauseOptions,
  QueueOptions,
  Release,
  ResumeOptions,
  RunNowOptions,
  ScheduleListOptions,
  SetKindLimitOptions,
  SetTenantLimitOptions,
} from './engine/queue-options.ts';
export type { SchedulePage, StoreMetrics } from './engine/queue.ts';
export { Scheduler } from './engine/scheduler.ts';
export type { SchedulerOptions } from './engine/scheduler.ts';
export { MAX_SCHEDULES_PER_SCOPE } from './core/bounds.ts';
export { MAX_PAUSES, MAX_PAUSES_PER_SCOPE } from './core/pauses.ts';
export type { Pause, PauseBounds, PauseScope } from './core/pauses.ts';
export { MAX_KIND_LIMITS } from './core/kind-limits.ts';
export type { KindLimit, KindLimitStatus, TokenBucket } from './core/kind-limits.ts';
export { MAX_TENANT_LIMITS, MAX_TENANT_WEIGHT } from './core/tenant-limits.ts';
export type { TenantLimit, TenantLimitStatus } from './core/tenant-limits.ts';
export type {
  NewSchedule,
  Schedule,
  ScheduleChanges,
  ScheduleFiring,
  ScheduleJob,
  ScheduleJobInput,
} from './core/schedules.ts';
export type { QueueEvents, TransitionEvent, RefusedEvent, QueueEventEmitter } from './engine/observers.ts';
export type { TransitionName } from './core/transitions.ts';
export type { ListOrder } from './core/list-order.ts';
export { Maintenance, PRUNE_KIND } from './engine/maintenance.ts';
export type { ReapResult } from './engine/maintenance.ts';
export { LocalWorker } from './engine/worker.ts';
export type { LocalWorkerOptions } from './engine/worker.ts';
export { DEFAULT_PRIORITY } from './core/drafts.ts';
export { ORDER_WAIT } from './core/ordered-keys.ts';
export type { BlockedKey } from './core/ordered-keys.ts';
export { JobState, JOB_STATE_NAMES, SYSTEM_SCOPE, ANY_SCOPE, tenantScope, finishedAt } from './core/types.ts';
export type {
  CountRow,
  EnqueueResult,
  EventTransition,
  ItemResult,
  JobEvent,
  JobRecord,
  SupersedeMode,
  OrderDeadPolicy,
  TraceContext,
  LeaseFence,
  ListPage,
  Micros,
  NewJob,
  QueueScope,
  ScopeFilter,
} from './core/types.ts';
export { ErrorCode, TelhaError, LeaseConflictError, CorruptRecordError, isTelhaError } from './core/errors.ts';
export type { LeaseConflictReason } from './core/errors.ts';
export { systemClock, ManualClock } from './core/clock.ts';
export type { Clock } from './core/clock.ts';
export { makeConfig, resolveConfig, configFromEnv, DEFAULT_CONFIG } from './core/config.ts';
export type {
  TelhaConfig,
  JobsConfig,
  KindConfig,
  StorageConfig,
  RetentionConfig,
  SchedulesConfig,
  ConfigInput,
} from './core/config.ts';
export { resultJson } from './core/results.ts';
export { kindPolicy } from './core/kind-policy.ts';
export type { KindPolicy } from './core/kind-policy.ts';
export { parseRate } from './core/rate.ts';
export type { Rate } from './core/rate.ts';
export type { Logger } from './core/logger.ts';
export { AttemptTimeoutError, PermanentError } from './worker/runner.ts';
export type {
  JobContext,
  JobHandler,
  RunnerOptions,
  TaskHandler,
  WorkerEvents,
  WorkerListener,
} from './worker/runner.ts';
export { defineTask, jsonCodec, Task } from './client/tasks.ts';
export type {
  PayloadCodec,
  TaskEnqueueOptions,
  TaskHandleOptions,
  TaskJob,
  TaskJobHandler,
  TaskOptions,
  TaskProducer,
} from './client/tasks.ts';
export type { StandardSchemaV1 } from './client/standard-schema.ts';
export type { BackupSummary, FiredSchedule, ImportOutcome, JobStore, ScheduleQuery } from './storage/types.ts';
