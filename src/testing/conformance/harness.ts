/**
 * What the conformance suite needs from a backend: a queue on a fresh store
 * with a manual clock, the store itself (a few cases check the seam
 * directly), and, for durable backends, a way to reopen it.
 */
import type { ManualClock } from '../../core/clock.ts';
import { makeConfig, type ConfigInput, type TelhaConfig } from '../../core/config.ts';
import type { JobRecord, LeaseFence, NewJob, QueueScope } from '../../core/types.ts';
import type { Queue } from '../../engine/queue.ts';
import type { JobStore } from '../../storage/types.ts';

export interface HarnessOptions {
  readonly config?: ConfigInput;
}

export interface Harness {
  readonly queue: Queue;
  /** The store under `queue`. */
  readonly store: JobStore;
  readonly clock: ManualClock;
  readonly config: TelhaConfig;
  /** Close and open the same store again (durable backends), returning the new queue. */
  reopen(): Promise<Queue>;
  close(): Promise<void>;
}

/** Opens a queue on a fresh, empty store, with the given settings and a `ManualClock`. */
export type HarnessFactory = (options?: HarnessOptions) => Promise<Harness>;

/** The test configuration: the defaults, retention off so nothing disappears under a test. */
export function testConfig(values: ConfigInput = {}, storagePath = '.tmp/unused'): TelhaConfig {
  const { jobs, retention, ...rest } = values as { jobs?: object; retention?: object };
  return makeConfig({
    ...rest,
    storage: { path: storagePath },
    jobs: { ...(jobs ?? {}) },
    retention: { enabled: false, ...(retention ?? {}) },
  });
}

/** The fencing pair a leased job was granted. */
export function fenceOf(job: JobRecord): LeaseFence {
  if (job.workerId === null) throw new Error(`job ${job.jobId} is not leased`);
  return { workerId: job.workerId, leaseGeneration: job.leaseGeneration };
}

let fixtureCount = 0;

/**
 * One fixture builder that puts a job in any state through the public API:
 * the job goes through real transitions, so its record and indexes are
 * exactly what production would hold.
 */
export async function jobIn(
  h: Harness,
  scope: QueueScope,
  state: 'pending' | 'leased' | 'completed' | 'dead' | 'cancelled',
  job: NewJob = { kind: `fixture.${++fixtureCount}` },
): Promise<JobRecord> {
  const { job: created } = await h.queue.enqueue(job, scope);
  if (state === 'pending') return created;
  if (state === 'cancelled') return h.queue.cancel(created.jobId, { by: 'fixture' });
  // Fixtures get a kind of their own, so this job is the first ready job of its kind.
  const leased = await h.queue.leaseNext({ workerId: 'fixture-worker', kinds: [created.kind], scope });
  if (leased === null || leased.jobId !== created.jobId) {
    throw new Error(`fixture expected to lease ${created.jobId}, got ${leased?.jobId ?? 'nothing'}`);
  }
  if (state === 'leased') return leased;
  if (state === 'completed') return (await h.queue.complete(leased.jobId, fenceOf(leased))).job;
  return h.queue.fail(leased.jobId, fenceOf(leased), { error: 'fixture', permanent: true });
}
