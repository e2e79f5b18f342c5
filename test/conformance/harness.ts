/**
 * What the conformance suite needs from a backend: a queue on a fresh store
 * with a manual clock, and (for durable backends) a way to reopen it.
 */
import type { BackoffByKind } from '../../src/core/backoff.ts';
import type { ManualClock } from '../../src/core/clock.ts';
import { makeConfig, type ConfigInput, type TelhaConfig } from '../../src/core/config.ts';
import type { JobRecord, LeaseFence, QueueScope } from '../../src/core/types.ts';
import type { EnqueueOptions, Queue } from '../../src/engine/queue.ts';

export interface HarnessOptions {
  readonly config?: ConfigInput;
  readonly backoffByKind?: BackoffByKind;
}

export interface Harness {
  readonly queue: Queue;
  readonly clock: ManualClock;
  readonly config: TelhaConfig;
  /** Close and open the same store again (durable backends), returning the new queue. */
  reopen(): Promise<Queue>;
  close(): Promise<void>;
}

export type HarnessFactory = (options?: HarnessOptions) => Promise<Harness>;

/** The test configuration: the spec's defaults, retention off so nothing disappears under a test. */
export function testConfig(values: ConfigInput = {}, storagePath = '.tmp/unused'): TelhaConfig {
  const { jobs, retention, ...rest } = values as { jobs?: object; retention?: object };
  return makeConfig({
    ...rest,
    storage: { path: storagePath },
    jobs: { ...(jobs ?? {}) },
    retention: { enabled: false, ...(retention ?? {}) },
  });
}

export function fenceOf(job: JobRecord): LeaseFence {
  if (job.workerId === null) throw new Error(`job ${job.jobId} is not leased`);
  return { workerId: job.workerId, leaseGeneration: job.leaseGeneration };
}

/**
 * One fixture builder that puts a job in any state through the public API
 * (River's testfactory): the job goes through real transitions, so its
 * record and indexes are exactly what production would hold.
 */
export async function jobIn(
  h: Harness,
  scope: QueueScope,
  state: 'pending' | 'leased' | 'completed' | 'dead',
  job: EnqueueOptions = { kind: `fixture.${++fixtureCount}` },
): Promise<JobRecord> {
  const { job: created } = await h.queue.enqueueAt(h.clock.now(), scope, job);
  if (state === 'pending') return created;
  const leased = await leaseExactly(h, created, scope, 'fixture-worker');
  if (state === 'leased') return leased;
  if (state === 'completed') return (await h.queue.completeAt(h.clock.now(), leased.jobId, fenceOf(leased))).job;
  return h.queue.failAt(h.clock.now(), leased.jobId, fenceOf(leased), { error: 'fixture', retryable: false });
}

let fixtureCount = 0;

/** Lease the given job, which must be the first ready job of its kind in scope (fixtures get a kind of their own). */
async function leaseExactly(h: Harness, created: JobRecord, scope: QueueScope, workerId: string): Promise<JobRecord> {
  const jobId = created.jobId;
  const leased = await h.queue.leaseNextAt(h.clock.now(), scope, { workerId, kinds: [created.kind] });
  if (leased === null || leased.jobId !== jobId) {
    throw new Error(`fixture expected to lease ${jobId}, got ${leased?.jobId ?? 'nothing'}`);
  }
  return leased;
}
