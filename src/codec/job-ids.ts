/**
 * Job ids: UUIDv7 (time-ordered, so the `ids` index is appended to, not
 * written at random places), with randomness drawn from a pooled buffer:
 * `crypto.getRandomValues` per id was a visible share of enqueue CPU (the figure is in
 * bench/RESULTS.md, "The measurements behind the code's choices").
 */
import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

const POOL_BYTES = 16 * 256;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

function pooledRandom16(): Uint8Array {
  if (offset + 16 > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + 16);
  offset += 16;
  return bytes;
}

export function newJobId(): string {
  return uuidv7({ rng: pooledRandom16 });
}
