/**
 * The conformance suite: the queue's semantics, written once and run against
 * every backend (the memory reference, RocksDB, PostgreSQL, and any store a
 * third party writes against the `JobStore` seam). A change to the seam lands
 * with cases here. One file per area; each registers its cases with
 * `node:test`.
 *
 *     import { conformanceSuite } from 'telha/testing';
 *     conformanceSuite('my-store', async (options) => ({ queue, store, clock, config, reopen, close }));
 */
import { describe } from 'node:test';
import { cancelCases } from './cancel.ts';
import { chainedCases } from './chained.ts';
import { Suite } from './context.ts';
import { eachCases } from './each.ts';
import { enqueueCases } from './enqueue.ts';
import { failureCases } from './failure.ts';
import { fairnessCases } from './fairness.ts';
import { fencingCases } from './fencing.ts';
import type { HarnessFactory } from './harness.ts';
import { leaseCases } from './lease.ts';
import { limitCases } from './limits.ts';
import { tenantCases } from './tenants.ts';
import { observeCases } from './observe.ts';
import { operatorCases } from './operators.ts';
import { pauseCases } from './pauses.ts';
import { readCases } from './reads.ts';
import { reaperCases } from './reaper.ts';
import { recordCases } from './records.ts';
import { releaseCases } from './release.ts';
import { resultCases } from './results.ts';
import { retentionCases } from './retention.ts';
import { scheduleCases } from './schedules.ts';
import { supersedeCases } from './supersede.ts';
import { orderedKeyCases } from './ordered-keys.ts';
import { timeoutCases } from './timeout.ts';
import { transferCases } from './transfer.ts';
import { traceContextCases } from './trace-context.ts';
import { transitionsLogCases } from './transitions-log.ts';

/** Register every conformance case for one backend, each on a fresh store from `factory`. */
export function conformanceSuite(backend: string, factory: HarnessFactory): void {
  describe(`conformance: ${backend}`, () => {
    const suite = new Suite(factory);
    for (const area of [
      enqueueCases,
      leaseCases,
      fairnessCases,
      fencingCases,
      failureCases,
      releaseCases,
      resultCases,
      cancelCases,
      supersedeCases,
      orderedKeyCases,
      operatorCases,
      reaperCases,
      timeoutCases,
      eachCases,
      chainedCases,
      readCases,
      recordCases,
      retentionCases,
      observeCases,
      scheduleCases,
      pauseCases,
      limitCases,
      tenantCases,
      transitionsLogCases,
      transferCases,
      traceContextCases,
    ]) {
      area(suite);
    }
  });
}
