/**
 * `telha/testing`: what a test of code that uses Telha needs: a clock that
 * moves only when told to, and the in-memory reference store.
 */
export { ManualClock } from './core/clock.ts';
export { MemoryJobStore } from './storage/memory/memory-store.ts';
