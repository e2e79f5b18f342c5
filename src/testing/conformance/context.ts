/** What every area of the conformance suite shares: the harness of the running case and small assertions. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach } from 'node:test';
import { ErrorCode, LeaseConflictError, TelhaError } from '../../core/errors.ts';
import { ANY_SCOPE, tenantScope, type JobRecord, type ScopeFilter } from '../../core/types.ts';
import type { LogEntry, LogFilter } from '../../core/transitions-log.ts';
import type { Queue } from '../../engine/queue.ts';
import type { Harness, HarnessFactory, HarnessOptions } from './harness.ts';

export const acme = tenantScope('acme');
export const globex = tenantScope('globex');
export const SECOND = 1_000_000;
export { ErrorCode };

/** The harness of the case that is running: a fresh store per case. */
export class Suite {
  private current: Harness | null = null;

  constructor(private readonly factory: HarnessFactory) {
    beforeEach(async () => {
      this.current = await factory();
    });
    afterEach(async () => {
      await this.current?.close();
      this.current = null;
    });
  }

  get h(): Harness {
    if (this.current === null) throw new Error('no harness outside a test case');
    return this.current;
  }

  get q(): Queue {
    return this.h.queue;
  }

  now(): number {
    return this.h.clock.now();
  }

  /** Swap in a harness with other settings for one case; the case's end closes it. */
  async withHarness(options: HarnessOptions): Promise<void> {
    await this.h.close();
    this.current = await this.factory(options);
  }

  /** Let every lease expire, reap them, and move past their backoff: the jobs are ready for another worker. */
  async expireAndReap(): Promise<void> {
    this.h.clock.advanceSeconds(this.h.config.jobs.lease_ttl_secs);
    await this.q.maintenance.reapExpired();
    this.h.clock.advanceSeconds(3_600);
  }

  /** Lease the next job, which must exist. */
  async lease(scope: ScopeFilter, workerId = 'w1', kinds?: string[]): Promise<JobRecord> {
    const job = await this.q.leaseNext({ workerId, scope, ...(kinds ? { kinds } : {}) });
    assert.ok(job, 'expected a job to lease');
    return job;
  }
}

export async function rejects(
  promise: Promise<unknown>,
  code: ErrorCode,
  check?: (error: TelhaError) => void,
): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof TelhaError, `expected a TelhaError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    check?.(error);
    return true;
  });
}

export function conflict(reason: LeaseConflictError['reason']): (error: TelhaError) => void {
  return (error) => {
    assert.ok(error instanceof LeaseConflictError);
    assert.equal(error.reason, reason);
  };
}

/** Jobs per state (its numeric value) in a scope. */
export async function countsOf(queue: Queue, scope: ScopeFilter = ANY_SCOPE): Promise<Record<string, number>> {
  const totals: Record<string, number> = {};
  for (const row of await queue.counts(scope)) totals[row.state] = (totals[row.state] ?? 0) + row.count;
  return totals;
}

/**
 * Every entry of the transitions log after `from` that matches, and the position after the last
 * read. On PostgreSQL an entry is readable only once every older transaction of the cluster has
 * ended (another test's may be open): read until `count` are there, each read a round trip that
 * waits for nothing.
 */
export async function readLog(
  queue: Queue,
  from: string,
  filter: LogFilter,
  count: number,
): Promise<{ entries: LogEntry[]; position: string }> {
  const entries: LogEntry[] = [];
  let position = from;
  for (let reads = 0; entries.length < count; reads++) {
    assert.ok(reads < 100_000, `only ${entries.length} of ${count} entries became readable`);
    const page = await queue.feed.read(position, 2, filter);
    entries.push(...page.entries);
    position = page.position;
  }
  return { entries, position };
}
