/**
 * A store holding what a queue keeps beside its jobs, for moving between stores
 * (`transfer.ts` here, and `test/postgres/transfer.test.ts` between backends): tenant limits and
 * weights, an ordered key blocked by a Dead head with jobs waiting behind it, a key mid-line
 * with a Leased head, a key whose Dead head an operator released, and a debounced Pending job.
 * `fillKeyed` builds it in a queue; `checkKeyed` checks, in the queue it was moved to, that it
 * runs as it would have where it was built.
 */
import assert from 'node:assert/strict';
import { JobState, tenantScope, type JobRecord, type NewJob, type QueueScope } from '../../core/types.ts';
import type { Queue } from '../../engine/queue.ts';
import { fenceOf } from './harness.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');
/** A debounce window no test outlasts: the debounced job stays gated through the check. */
const DEBOUNCE = { supersedeKey: 'd', debounceMs: 600_000, debounceMaxMs: 1_200_000 } as const;

export interface KeyedStore {
  /** Key `b`: its Dead head, and the jobs waiting behind it. */
  readonly blocked: JobRecord;
  readonly behindBlocked: readonly JobRecord[];
  /** Key `m`: its Leased head, and the jobs waiting behind it. */
  readonly head: JobRecord;
  readonly behindHead: readonly JobRecord[];
  /** Key `r`: its Dead head, released by an operator (no longer in the line), and the job that runs next. */
  readonly released: JobRecord;
  readonly afterReleased: JobRecord;
  /** Supersede key `d`: the debounced Pending job holding it. */
  readonly debounced: JobRecord;
  /** Globex, limited to one job leased at once: the leased one, and one held back. */
  readonly busy: JobRecord;
  readonly heldBack: JobRecord;
}

async function enqueue(q: Queue, job: NewJob, scope: QueueScope = acme): Promise<JobRecord> {
  return (await q.enqueue(job, scope)).job;
}

async function leaseOf(q: Queue, scope: QueueScope, kind: string, workerId = 'w1'): Promise<JobRecord> {
  const job = await q.leaseNext({ workerId, scope, kinds: [kind] });
  assert.ok(job, `a ${kind} job to lease`);
  return job;
}

export async function fillKeyed(q: Queue): Promise<KeyedStore> {
  await q.setTenantLimit({ tenant: 'acme', weight: 2 });
  await q.setTenantLimit({ tenant: 'globex', concurrency: 1, weight: 3 });
  const line = async (kind: string, key: string, n: number): Promise<JobRecord[]> => {
    const jobs: JobRecord[] = [];
    for (let i = 1; i <= n; i++) jobs.push(await enqueue(q, { kind, payload: `${key}${i}`, orderKey: key }));
    return jobs;
  };
  const [blocked, ...behindBlocked] = await line('blocked', 'b', 3);
  const dead = await leaseOf(q, acme, 'blocked');
  await q.fail(dead.jobId, fenceOf(dead), { error: 'boom', permanent: true });
  const [released, afterReleased] = await line('released', 'r', 2);
  const died = await leaseOf(q, acme, 'released');
  await q.fail(died.jobId, fenceOf(died), { error: 'boom', permanent: true });
  await q.releaseKey(acme, 'r');
  const [, ...behindHead] = await line('mid', 'm', 3);
  const head = await leaseOf(q, acme, 'mid');
  await enqueue(q, { kind: 'debounced', payload: 'd1', ...DEBOUNCE });
  const debounced = await enqueue(q, { kind: 'debounced', payload: 'd2', ...DEBOUNCE });
  const busyJob = await enqueue(q, { kind: 'g', payload: 'g1' }, globex);
  const heldBack = await enqueue(q, { kind: 'g', payload: 'g2' }, globex);
  const busy = await leaseOf(q, globex, 'g');
  assert.equal(busy.jobId, busyJob.jobId);
  return {
    blocked: await q.show((blocked as JobRecord).jobId),
    behindBlocked,
    head,
    behindHead,
    released: await q.show((released as JobRecord).jobId),
    afterReleased: afterReleased as JobRecord,
    debounced,
    busy,
    heldBack,
  };
}

/** Lease and complete acme's jobs until none is ready; the payloads run, per ordered key. */
async function drain(q: Queue): Promise<Record<string, string[]>> {
  const ran: Record<string, string[]> = {};
  for (let job = await q.leaseNext({ workerId: 'w2', scope: acme }); job !== null;) {
    if (job.orderKey !== null) (ran[job.orderKey] ??= []).push(Buffer.from(job.payload).toString());
    await q.complete(job.jobId, fenceOf(job));
    job = await q.leaseNext({ workerId: 'w2', scope: acme });
  }
  return ran;
}

export async function checkKeyed(q: Queue, fill: KeyedStore): Promise<void> {
  assert.deepEqual(
    (await q.tenantLimits()).map(({ tenant, concurrency, weight }) => ({ tenant, concurrency, weight })),
    [
      { tenant: 'acme', concurrency: null, weight: 2 },
      { tenant: 'globex', concurrency: 1, weight: 3 },
    ],
  );
  // The tenant's limit applies: its one place is the leased job's until that job completes.
  assert.equal(await q.leaseNext({ workerId: 'w2', scope: globex }), null, "globex's one place is taken");
  await q.complete(fill.busy.jobId, fenceOf(fill.busy));
  assert.equal((await leaseOf(q, globex, 'g', 'w2')).jobId, fill.heldBack.jobId);

  // Only `b` is blocked: `r`'s Dead head was released before the move, and `m`'s head runs.
  const blocked = await q.blockedKeys(acme);
  assert.deepEqual(
    blocked.map((k) => ({ key: k.orderKey, head: k.head?.jobId, waiting: k.waiting })),
    [{ key: 'b', head: fill.blocked.jobId, waiting: fill.behindBlocked.length }],
  );
  assert.equal(fill.released.state, JobState.Dead);

  // The Leased head's holder completes it with its fence, and the line moves on in order.
  assert.equal((await q.complete(fill.head.jobId, fenceOf(fill.head))).job.state, JobState.Completed);
  assert.deepEqual(await drain(q), { r: ['r2'], m: ['m2', 'm3'] });

  // The blocked key is released by an operator, and its jobs run in order.
  assert.equal((await q.releaseKey(acme, 'b'))?.jobId, fill.behindBlocked[0]?.jobId);
  assert.deepEqual(await drain(q), { b: ['b2', 'b3'] });

  // The debounced job still holds its key: the next enqueue replaces it, within the same run.
  const again = await q.enqueue({ kind: 'debounced', payload: 'd3', ...DEBOUNCE }, acme);
  const replaced = await q.show(fill.debounced.jobId);
  assert.equal(replaced.state, JobState.Cancelled);
  assert.equal(replaced.supersededBy, again.job.jobId);
  assert.equal(again.job.debounceUntil, fill.debounced.debounceUntil, "the run's bound carried over");
}
