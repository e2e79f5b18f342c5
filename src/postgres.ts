/**
 * `telha/postgres`: the PostgreSQL backend, for programs that build their
 * queue on a store of their own choosing, and transactional enqueue, completion
 * and failure through an application's own `pg` client. Importing it loads `pg`.
 */
export { PostgresJobStore } from './storage/postgres/postgres-store.ts';
export type { PostgresStoreOptions } from './storage/postgres/postgres-store.ts';
export { completeInTransaction, enqueueInTransaction, failInTransaction } from './storage/postgres/transactional.ts';
export type { TransactionalEnqueueOptions, TransactionalOptions } from './storage/postgres/transactional.ts';
