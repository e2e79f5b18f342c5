/**
 * Transactional enqueue, for applications that keep their own data in the
 * same PostgreSQL database as Telha: the jobs are written through the
 * application's connection, inside its transaction, so they exist only if
 * that transaction commits.
 */
import type pg from 'pg';
import { systemClock, type Clock } from '../../core/clock.ts';
import { DEFAULT_CONFIG, type TelhaConfig } from '../../core/config.ts';
import { draftJob } from '../../core/drafts.ts';
import { invalidArgument } from '../../core/errors.ts';
import { MAX_BATCH_JOBS } from '../../core/bounds.ts';
import type { EnqueueResult, NewJob, QueueScope } from '../../core/types.ts';
import { checkScope } from '../../core/validate.ts';
import { newJobId } from '../../codec/job-ids.ts';
import { CreatedAtSequence } from '../shared.ts';
import { pgFailure } from './failures.ts';
import { pgSchema } from './connection.ts';
import { insertJobs } from './insert.ts';

/** This process's created_at for jobs enqueued through applications' transactions: follows the clock. */
const createdAt = new CreatedAtSequence(0);

export interface TransactionalEnqueueOptions {
  /** The schema a Telha server created (`storage.schema`). Default `telha`. */
  readonly schema?: string;
  /** For the payload cap; default the built-in defaults. */
  readonly config?: TelhaConfig;
  readonly clock?: Clock;
}

/**
 * Enqueue `jobs` in `scope` through `tx`, a `pg` client inside a transaction
 * the caller opened (`BEGIN`) and will commit or roll back. Validation and
 * idempotency are those of `Queue.enqueueBatch`. The schema must have been
 * created by a Telha server (it migrates at start). When the transaction
 * commits, its notification wakes lease calls parked on every server.
 */
export async function enqueueInTransaction(
  tx: pg.ClientBase,
  jobs: readonly NewJob[],
  scope: QueueScope,
  options: TransactionalEnqueueOptions = {},
): Promise<EnqueueResult[]> {
  checkScope(scope);
  if (jobs.length > MAX_BATCH_JOBS) throw invalidArgument('jobs', `at most ${MAX_BATCH_JOBS} jobs per batch`);
  const now = (options.clock ?? systemClock).now();
  const maxPayloadBytes = (options.config ?? DEFAULT_CONFIG).jobs.max_payload_bytes;
  const drafts = jobs.map((job, i) =>
    draftJob(scope, job, {
      now,
      fieldPrefix: jobs.length === 1 ? '' : `jobs[${i}].`,
      maxPayloadBytes,
      jobId: newJobId(),
    }),
  );
  // Never run again here: the transaction is the application's, and a failed connection has
  // rolled it back. The failure reads as `unavailable`, so the application can tell it apart.
  const outcomes = await insertJobs(tx, pgSchema(options.schema ?? 'telha'), drafts, now, { createdAt }).catch(
    (error: unknown) => {
      throw pgFailure(error);
    },
  );
  return outcomes.map(({ record, created }) => ({ job: record, created }));
}
