/**
 * Counting the live index's B-tree lookups, for tests that a claim jumps over held-back work
 * (a paused scope, a full lane) with a seek per tree, not a step per job.
 */
import { afterEach, beforeEach } from 'node:test';
import sortedBtree from 'sorted-btree';
import { scopeBytes } from '../../src/codec/keys.ts';
import { tenantScope } from '../../src/core/types.ts';

const proto = sortedBtree.default.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
const SEEKS = ['nextHigherPair', 'getPairOrNextHigher', 'nextHigherKey', 'minKey', 'entries', 'forRange'] as const;

/** A tenant's scope as the live index keys it (latin1 of the 32 scope bytes). */
export function scopeOf(tenant: string): string {
  return scopeBytes(tenantScope(tenant)).toString('latin1');
}

/** The live-index key of job `n` of a tenant: priority 128, created at `n`. */
export function liveKey(tenant: string, n: number): string {
  const tail = Buffer.alloc(24);
  tail[1] = 128;
  tail.writeUInt32BE(n, 6);
  tail.writeUInt32BE(n, 20);
  return scopeOf(tenant) + tail.toString('latin1');
}

/**
 * Count B-tree lookups in each test of the enclosing `describe` (hooks installed here): read
 * `seeks.count`, and set it to 0 before the claim being measured.
 */
export function countSeeks(): { count: number } {
  const seeks = { count: 0 };
  const originals = new Map<string, (...args: unknown[]) => unknown>();
  beforeEach(() => {
    for (const name of SEEKS) {
      const original = proto[name] as (...args: unknown[]) => unknown;
      originals.set(name, original);
      proto[name] = function (this: unknown, ...args: unknown[]) {
        seeks.count++;
        return original.apply(this, args);
      };
    }
  });
  afterEach(() => {
    for (const [name, original] of originals) proto[name] = original;
  });
  return seeks;
}
