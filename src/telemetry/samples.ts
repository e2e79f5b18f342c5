/**
 * The overview's charts: throughput (jobs enqueued, completed, failed and
 * dead-lettered per second) and the oldest Pending job's age, one sample
 * every `metrics.refresh_ms` for the last hour, kept in memory in a ring.
 * One ring for the whole queue, and one for each tenant a token names (only
 * they can open a tenant's dashboard), so a tenant's charts show its own jobs.
 */
import { JobState } from '../core/types.ts';
import type { QueueObservation } from '../engine/observers.ts';

/** One point of the charts. Rates are per second over the interval that ended at `t`. */
export interface Sample {
  /** Seconds since the epoch. */
  readonly t: number;
  readonly enqueued: number;
  readonly completed: number;
  readonly failed: number;
  readonly dead: number;
  /** Seconds; `null` where it is not known (a tenant's charts). */
  readonly oldestPendingAge: number | null;
}

const HOUR_MS = 3_600_000;

/** The transitions the throughput chart counts, and the series each adds to. */
const TALLIED: Readonly<Record<string, 'enqueued' | 'completed' | 'failed'>> = {
  enqueue: 'enqueued',
  complete: 'completed',
  fail: 'failed',
};

class Tally {
  enqueued = 0;
  completed = 0;
  failed = 0;
  dead = 0;

  add(observation: QueueObservation): void {
    if (observation.type !== 'transition') return;
    const field = TALLIED[observation.transition];
    if (field !== undefined) this[field]++;
    if (observation.record.state === JobState.Dead && observation.previous !== JobState.Dead) this.dead++;
  }

  take(t: number, seconds: number, oldestPendingAge: number | null): Sample {
    const sample = {
      t,
      enqueued: this.enqueued / seconds,
      completed: this.completed / seconds,
      failed: this.failed / seconds,
      dead: this.dead / seconds,
      oldestPendingAge,
    };
    this.enqueued = this.completed = this.failed = this.dead = 0;
    return sample;
  }
}

class Ring {
  private readonly items: Sample[] = [];
  constructor(private readonly capacity: number) {}

  push(sample: Sample): void {
    this.items.push(sample);
    if (this.items.length > this.capacity) this.items.shift();
  }

  all(): readonly Sample[] {
    return this.items;
  }
}

export class Samples {
  private readonly capacity: number;
  private readonly total = new Tally();
  private readonly ring: Ring;
  private readonly tenants = new Map<string, { tally: Tally; ring: Ring }>();

  constructor(
    readonly intervalMs: number,
    tenants: readonly string[],
  ) {
    this.capacity = Math.max(2, Math.ceil(HOUR_MS / intervalMs));
    this.ring = new Ring(this.capacity);
    for (const tenant of tenants) this.tenants.set(tenant, { tally: new Tally(), ring: new Ring(this.capacity) });
  }

  observe(observation: QueueObservation): void {
    this.total.add(observation);
    if (this.tenants.size === 0 || observation.type !== 'transition' || observation.record.tenant === null) return;
    this.tenants.get(observation.record.tenant)?.tally.add(observation);
  }

  /** Close the interval that ends now (`t` seconds since the epoch) and return the queue-wide sample. */
  tick(t: number, seconds: number, oldestPendingAge: number | null): Sample {
    const sample = this.total.take(t, seconds, oldestPendingAge);
    this.ring.push(sample);
    for (const { tally, ring } of this.tenants.values()) ring.push(tally.take(t, seconds, null));
    return sample;
  }

  /** The last hour: queue-wide with `tenant` null, else that tenant's (empty for a tenant no token names). */
  history(tenant: string | null): readonly Sample[] {
    if (tenant === null) return this.ring.all();
    return this.tenants.get(tenant)?.ring.all() ?? [];
  }

  /** The newest sample of a ring, if any. */
  latest(tenant: string | null): Sample | null {
    const all = this.history(tenant);
    return all[all.length - 1] ?? null;
  }
}
