/**
 * Telha's public API: the engine a program opens on a local directory.
 * Named exports only; types are exported as types.
 */
export { openQueue, loadConfig } from './engine/open.ts';
export type { OpenQueueOptions } from './engine/open.ts';
export { Queue, DEFAULT_PRIORITY, PRUNE_KIND } from './engine/queue.ts';
export type {
  CompleteOptions,
  CompleteResult,
  EnqueueOptions,
  EnqueueResult,
  FailOptions,
  LeaseOptions,
  ListOptions,
  QueueOptions,
  ReapResult,
  SystemTask,
} from './engine/queue.ts';
export { JobState, JOB_STATE_NAMES, SYSTEM_SCOPE, ANY_SCOPE, tenantScope, finishedAt } from './core/types.ts';
export type {
  JobEvent,
  JobRecord,
  LeaseFence,
  Micros,
  QueueScope,
  ScopeFilter,
  EventTransition,
} from './core/types.ts';
export { ErrorCode, TelhaError, LeaseConflictError, CorruptRecordError, isTelhaError } from './core/errors.ts';
export type { LeaseConflictReason } from './core/errors.ts';
export { systemClock, ManualClock } from './core/clock.ts';
export type { Clock } from './core/clock.ts';
export { makeConfig, resolveConfig, configFromEnv, DEFAULT_CONFIG } from './core/config.ts';
export type { TelhaConfig, JobsConfig, StorageConfig, RetentionConfig, ConfigInput } from './core/config.ts';
export type { KindBackoff, BackoffByKind } from './core/backoff.ts';
export type { Logger } from './core/logger.ts';
export { RocksJobStore } from './storage/rocksdb/rocks-store.ts';
export { PostgresJobStore } from './storage/postgres/postgres-store.ts';
export { enqueueInTransaction } from './engine/transactional.ts';
export { LocalWorker } from './engine/worker.ts';
export type { LocalWorkerOptions } from './engine/worker.ts';
export { PermanentError } from './worker/runner.ts';
export type { JobContext, JobHandler, RunnerOptions } from './worker/runner.ts';
export type { TransactionalEnqueueOptions } from './engine/transactional.ts';
export type { JobStore } from './storage/types.ts';
