/** What a run measured, as the report prints it and as `BENCH_PEERS_JSON` stores it. */
import type { Tier } from './types.ts';

/** One number in one table cell. `value` is NaN when nothing was measured (`text` then says why). */
export interface Cell {
  readonly value: number;
  /** Printed instead of the number, e.g. `n/a (fixed 4 h lock)`, `skipped: ...`, `error`. */
  readonly text?: string;
  /** A footnote: how the number came about when that is not the plain case (capped, partial). */
  readonly note?: string;
}

/** Exactly-once bookkeeping of one measurement, from the harness's own count of handler invocations. */
export interface Check {
  readonly measurement: string;
  /** Jobs the harness enqueued for handlers to run. */
  readonly expected: number;
  /** Expected jobs whose handler never ran, though the system reported every job done (a violation). */
  readonly missing: number;
  /** Expected jobs whose handler ran more than once (a violation). */
  readonly twice: number;
  /** Handler runs for jobs the harness never enqueued for running, e.g. a delayed filler job run early (a violation). */
  readonly stray: number;
  /** Jobs not run because the measurement hit its time cap (not a violation; the number is partial). */
  readonly notReached: number;
}

export function violations(check: Check): number {
  return check.missing + check.twice + check.stray;
}

export interface SystemRun {
  readonly id: string;
  readonly label: string;
  readonly isTelha: boolean;
  readonly settings: readonly string[];
  readonly fillMethod: string;
  /** Cells by metric key (see the workload definitions in report.ts). */
  readonly cells: Record<string, Cell>;
  readonly checks: Check[];
  readonly errors: string[];
  /** The 1-minute load average when the system's turn started and ended: other work on the box skews its numbers. */
  load: { start: number; end: number };
}

export interface TierRun {
  readonly tier: Tier;
  readonly systems: SystemRun[];
  readonly seconds: number;
}
