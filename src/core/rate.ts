/**
 * A rate, as configuration writes it: `"<count>/<period>"`, e.g. `"100/s"`, `"10/1m"`,
 * `"5/30s"`, `"1000/1h"`. The period is an optional whole number and a unit (`ms`, `s`, `m`,
 * `h`, `d`); a bare unit means one of it.
 */
import { invalidArgument } from './errors.ts';
import { MAX_TIMER_MS } from './bounds.ts';

/** At most `count` events per `periodMs` milliseconds. */
export interface Rate {
  readonly count: number;
  readonly periodMs: number;
}

/** The largest count a rate may allow per period: far more leases than one store serves. */
export const MAX_RATE_COUNT = 1_000_000_000;

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const RATE_PATTERN = /^(\d+)\/(\d*)(ms|s|m|h|d)$/;

/**
 * Parse `"<count>/<period>"`. Refuses what is not that shape (`"many/s"`, `"100"`, `"-1/s"`),
 * a zero count or period, a count above `MAX_RATE_COUNT` (10^9) and a period longer than
 * about 24.8 days (the longest timer Node can set, which a refill may wait), each with an
 * `invalid_argument` error naming `field`.
 */
export function parseRate(text: unknown, field = 'rate'): Rate {
  if (typeof text !== 'string') throw invalidArgument(field, 'must be a string such as "100/s" or "10/1m"');
  const match = RATE_PATTERN.exec(text.trim());
  if (match === null) {
    throw invalidArgument(
      field,
      `"${text.slice(0, 64)}" is not a rate: write "<count>/<period>", e.g. "100/s", "10/1m" (units ms, s, m, h, d)`,
    );
  }
  const [, countText = '', periodText = '', unit = 's'] = match;
  const count = Number(countText);
  if (count < 1) throw invalidArgument(field, `the count must be at least 1 (got "${text}")`);
  if (count > MAX_RATE_COUNT) throw invalidArgument(field, `the count must be at most ${MAX_RATE_COUNT}`);
  const periods = periodText === '' ? 1 : Number(periodText);
  const periodMs = periods * (UNIT_MS[unit] ?? 1_000);
  if (periodMs < 1) throw invalidArgument(field, `the period must be longer than zero (got "${text}")`);
  if (periodMs > MAX_TIMER_MS) {
    throw invalidArgument(field, `the period must be at most ${MAX_TIMER_MS} ms (about 24.8 days)`);
  }
  return { count, periodMs };
}

/** The canonical text of a rate: `"100/1s"` for `{ count: 100, periodMs: 1000 }`. */
export function formatRate(rate: Rate): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const ms = UNIT_MS[unit] as number;
    if (rate.periodMs % ms === 0) return `${rate.count}/${rate.periodMs / ms}${unit}`;
  }
  return `${rate.count}/${rate.periodMs}ms`;
}
