/**
 * `telha/client`: what producers, workers and operator tools import. It
 * speaks only the wire protocol and never loads the engine or RocksDB.
 */
export { TelhaClient, DEFAULT_ADDRESS } from './client.ts';
export type { ClientOptions, CountRow, EnqueueOutcome, LeaseParams, ListPage, ListParams } from './client.ts';
export { Worker, PermanentError } from './worker.ts';
export type { JobContext, JobHandler, WorkerOptions } from './worker.ts';
export type { NewJobInput, RemoteJob } from './convert.ts';
export { ErrorCode, TelhaError, LeaseConflictError, isTelhaError } from '../core/errors.ts';
export type { LeaseConflictReason } from '../core/errors.ts';
export { JobState, JOB_STATE_NAMES, SYSTEM_SCOPE, tenantScope } from '../core/types.ts';
export type { JobEvent, JobRecord, LeaseFence, QueueScope } from '../core/types.ts';
