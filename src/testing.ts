/**
 * `telha/testing`: what a test of code that uses Telha needs (a clock that
 * moves only when told to, the in-memory reference store), and the
 * conformance suite a third-party `JobStore` runs to prove it keeps the
 * queue's semantics. The suite registers its cases with `node:test`.
 */
export { ManualClock } from './core/clock.ts';
export { MemoryJobStore } from './storage/memory/memory-store.ts';
export { conformanceSuite } from './testing/conformance/index.ts';
export { fenceOf, jobIn, testConfig } from './testing/conformance/harness.ts';
export type { Harness, HarnessFactory, HarnessOptions } from './testing/conformance/harness.ts';
