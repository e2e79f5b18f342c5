/** What the Telha adapters share: the scope and kinds of the benchmark's jobs, and their configuration. */
import { tenantScope, type NewJob, type QueueScope } from 'telha';
import type { OpenOptions } from './types.ts';

export const SCOPE: QueueScope = tenantScope('bench');
/** The kind every measured job has; workers lease only this prefix, never the retained filler. */
export const KIND = 'bench';
/** Completed filler rows (workload 4) carry this kind. */
export const RETAINED_KIND = 'retained';

export function telhaJob(tag: string, delayMs?: number): NewJob {
  return { kind: KIND, payload: Buffer.from(tag), ...(delayMs === undefined ? {} : { delayMs }) };
}

/** `jobs.*` overrides for the recovery workload's short leases. */
export function recoveryJobsConfig(options: OpenOptions): Record<string, number> {
  const r = options.recovery;
  if (!r) return {};
  return {
    lease_ttl_secs: r.leaseSeconds,
    reaper_interval_secs: r.checkSeconds,
    // A reaped lease counts as a failed attempt and waits out the retry backoff (10 s by default).
    ...(r.immediateRetry ? { backoff_base_secs: 0 } : {}),
  };
}
