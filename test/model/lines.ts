/**
 * The reference model's ordered keys (docs/design.md, "Ordered keys"), written out again: each
 * (scope, key) has a line of the jobs not yet out of it, in enqueue order; the first runs, the
 * others wait behind a gate that never opens until their turn. A job leaves when it completes or
 * is cancelled, or goes Dead with the policy `release`; a Dead head with `block` keeps its place
 * until it is retried, discarded, or an operator releases the key.
 */
import { JobState } from '../../src/core/types.ts';
import type { ModelJob, ModelScope } from './reference.ts';

/**
 * The gate of a job waiting for its ordered key's turn: past any time a job may be scheduled for
 * (the largest safe integer), so the gate itself never opens.
 */
export const MODEL_ORDER_WAIT = Number.MAX_SAFE_INTEGER;

/** A blocked key as the model lists it: tenant, key, the Dead head's id (`null`: none), jobs waiting. */
export type BlockedRow = readonly [ModelScope, string, string | null, number];

function waits(job: ModelJob): boolean {
  return job.state === JobState.Pending && job.notBefore === MODEL_ORDER_WAIT;
}

export class ModelLines {
  private readonly lines = new Map<string, { tenant: ModelScope; key: string; jobs: ModelJob[] }>();

  private lineOf(scope: ModelScope, key: string): ModelJob[] {
    const slot = `${scope ?? ''}\u0000${key}`;
    let line = this.lines.get(slot);
    if (line === undefined) {
      line = { tenant: scope, key, jobs: [] };
      this.lines.set(slot, line);
    }
    return line.jobs;
  }

  /** Whether a job enqueued now with `key` in `scope` waits: the line holds a job, or `earlier` (this call's) has one of it. */
  mustWait(scope: ModelScope, key: string, earlier: readonly ModelJob[]): boolean {
    return this.lineOf(scope, key).length > 0 || earlier.some((c) => c.tenant === scope && c.orderKey === key);
  }

  join(job: ModelJob): void {
    if (job.orderKey !== null) this.lineOf(job.tenant, job.orderKey).push(job);
  }

  /** After `job` moved: if it finished, it leaves its line, and the next job gets its turn. */
  settle(job: ModelJob): void {
    if (job.orderKey === null) return;
    const leaves =
      job.state === JobState.Completed ||
      job.state === JobState.Cancelled ||
      (job.state === JobState.Dead && job.orderReleaseOnDead);
    if (!leaves) return;
    const line = this.lineOf(job.tenant, job.orderKey);
    const i = line.indexOf(job);
    if (i < 0) return;
    line.splice(i, 1);
    ModelLines.promote(line);
  }

  /** The first job, if it waits, gets its turn: its own gate back. Returns it. */
  private static promote(line: readonly ModelJob[]): ModelJob | null {
    const first = line[0];
    if (first === undefined || !waits(first)) return null;
    first.notBefore = first.orderGate;
    first.orderGate = null;
    first.lastEvent = 'promoted';
    return first;
  }

  /**
   * An operator's release: `not_found` for a key without a line, `failed_precondition` for one
   * whose first job is not Dead (nor waiting); else the Dead head leaves (staying Dead) and the
   * next job's turn comes. Returns that job, `null` when none waited.
   */
  release(scope: ModelScope, key: string): { ok: true; value: ModelJob | null } | { ok: false; code: string } {
    const line = this.lineOf(scope, key);
    const first = line[0];
    if (first === undefined) return { ok: false, code: 'not_found' };
    if (first.state !== JobState.Dead && !waits(first)) return { ok: false, code: 'failed_precondition' };
    if (first.state === JobState.Dead) line.shift();
    return { ok: true, value: ModelLines.promote(line) };
  }

  /** Blocked keys in listing order (system first, then by tenant, then key). */
  blocked(): BlockedRow[] {
    const rows: BlockedRow[] = [];
    for (const { tenant, key, jobs } of this.lines.values()) {
      const first = jobs[0];
      if (first === undefined || (first.state !== JobState.Dead && !waits(first))) continue;
      rows.push([tenant, key, waits(first) ? null : first.id, jobs.length - 1]);
    }
    const order = (row: BlockedRow): string => `${row[0] ?? ''}\u0000${row[1]}`;
    return rows.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  }
}
