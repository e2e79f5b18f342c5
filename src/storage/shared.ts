/** Pieces every backend needs the same way. */
import type { Micros } from '../core/types.ts';

/**
 * `created_at` is strictly increasing per store: two jobs enqueued in the same
 * microsecond still get distinct, ordered timestamps, so they lease in enqueue order.
 */
export class CreatedAtSequence {
  private last: Micros;

  constructor(last: Micros) {
    this.last = last;
  }

  next(now: Micros): Micros {
    this.last = Math.max(now, this.last + 1);
    return this.last;
  }

  /** A job written as it was elsewhere (an import) took `at`: later ones come after it. */
  observe(at: Micros): void {
    this.last = Math.max(this.last, at);
  }

  get current(): Micros {
    return this.last;
  }
}
