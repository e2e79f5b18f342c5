import type { Micros } from './types.ts';

/**
 * The one source of time. Every service takes a `Clock`, so tests advance a
 * `ManualClock` (from `telha/testing`) instead of sleeping.
 */
export interface Clock {
  /** Current time in microseconds since the epoch. */
  now(): Micros;
}

export const MICROS_PER_SECOND = 1_000_000;

export function secondsToMicros(seconds: number): Micros {
  return Math.round(seconds * MICROS_PER_SECOND);
}

/** Wall-clock time with microsecond resolution. */
export const systemClock: Clock = {
  now(): Micros {
    // performance.timeOrigin + performance.now() has sub-millisecond resolution, unlike Date.now().
    return Math.floor((performance.timeOrigin + performance.now()) * 1000);
  },
};

/** A clock that moves only when told to. */
export class ManualClock implements Clock {
  private current: Micros;

  constructor(start: Micros = Date.UTC(2026, 0, 1) * 1000) {
    this.current = start;
  }

  now(): Micros {
    return this.current;
  }

  advance(micros: Micros): Micros {
    this.current += micros;
    return this.current;
  }

  advanceSeconds(seconds: number): Micros {
    return this.advance(secondsToMicros(seconds));
  }

  set(at: Micros): void {
    this.current = at;
  }
}

/**
 * Wall-clock time that a test can move ahead (never back): for tests whose
 * timers run for real (heartbeats, long polls) but that also need "an hour
 * later" (a lease expired, a backoff gate passed) without waiting for it.
 */
export class OffsetClock implements Clock {
  private offset: Micros = 0;

  now(): Micros {
    return systemClock.now() + this.offset;
  }

  advance(micros: Micros): Micros {
    if (micros < 0) throw new RangeError('an OffsetClock only moves forward');
    this.offset += micros;
    return this.now();
  }
}
