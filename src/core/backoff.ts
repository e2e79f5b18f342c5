import { secondsToMicros } from './clock.ts';
import { kindPolicy, type KindPolicyConfig } from './kind-policy.ts';
import type { Micros } from './types.ts';

/**
 * The retry delay: `min(base * factor^(attempts-1), cap)` seconds, in µs, with the kind's own
 * `[jobs.kinds."<prefix>"]` values where it has them. With the defaults (10 s, x4, cap 3,600 s):
 * 10, 40, 160, 640, 2,560, then 3,600 s. `attempts` is the count after the failure being paced,
 * so it is at least 1.
 */
export function backoffMicros(config: KindPolicyConfig, kind: string, attempts: number): Micros {
  const policy = kindPolicy(config, kind);
  const cap = policy.backoffCapSecs;
  let secs = policy.backoffBaseSecs;
  // Saturating: stop multiplying once the cap is reached, so a huge attempt count cannot overflow.
  for (let i = 1; i < attempts && secs < cap; i++) secs *= policy.backoffFactor;
  return secondsToMicros(Math.min(secs, cap));
}
