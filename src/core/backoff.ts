import { secondsToMicros } from './clock.ts';
import type { JobsConfig } from './config.ts';
import { invalidArgument } from './errors.ts';
import { MAX_DURATION_SECS } from './limits.ts';
import type { Micros } from './types.ts';

/**
 * A per-kind pacing override, set from code (`backoffByKind`).
 * `capSecs` defaults to `max(baseSecs, jobs.backoff_cap_secs)`: the base is also a floor for
 * the cap, so a kind may pace slower than the global cap allows.
 */
export interface KindBackoff {
  readonly baseSecs: number;
  readonly capSecs?: number;
}

export type BackoffByKind = ReadonlyMap<string, KindBackoff>;

/**
 * Refuse an override whose gate a record could not hold: each time from 0 to ten years
 * (`MAX_DURATION_SECS`), as `jobs.backoff_base_secs` and `jobs.backoff_cap_secs` are bounded.
 */
export function checkBackoffByKind(byKind: BackoffByKind): BackoffByKind {
  for (const [kind, backoff] of byKind) {
    for (const [name, secs] of [
      ['baseSecs', backoff.baseSecs],
      ['capSecs', backoff.capSecs],
    ] as const) {
      if (secs === undefined) continue;
      if (typeof secs !== 'number' || !(secs >= 0 && secs <= MAX_DURATION_SECS)) {
        throw invalidArgument(
          `backoffByKind[${JSON.stringify(kind)}].${name}`,
          `must be from 0 to ${MAX_DURATION_SECS} seconds (ten years; got ${String(secs)})`,
        );
      }
    }
  }
  return byKind;
}

/**
 * The retry delay: `min(base * factor^(attempts-1), cap)` seconds, in µs.
 * With the defaults (10 s, x4, cap 3,600 s): 10, 40, 160, 640, 2,560, then 3,600 s.
 * `attempts` is the count after the failure being paced, so it is at least 1.
 */
export function backoffMicros(
  config: Pick<JobsConfig, 'backoff_base_secs' | 'backoff_factor' | 'backoff_cap_secs'>,
  byKind: BackoffByKind,
  kind: string,
  attempts: number,
): Micros {
  const override = byKind.get(kind);
  const base = override ? override.baseSecs : config.backoff_base_secs;
  const cap = override
    ? (override.capSecs ?? Math.max(override.baseSecs, config.backoff_cap_secs))
    : config.backoff_cap_secs;
  let secs = base;
  // Saturating: stop multiplying once the cap is reached, so a huge attempt count cannot overflow.
  for (let i = 1; i < attempts && secs < cap; i++) secs *= config.backoff_factor;
  return secondsToMicros(Math.min(secs, cap));
}
