/** Harness factories for every backend, shared by the conformance suite and other cross-backend tests. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/core/clock.ts';
import { openQueue } from '../../src/engine/open.ts';
import type { Queue } from '../../src/engine/queue.ts';
import { testConfig, type Harness, type HarnessFactory, type HarnessOptions } from '../conformance/harness.ts';

export const memoryHarness: HarnessFactory = async (options: HarnessOptions = {}): Promise<Harness> => {
  const clock = new ManualClock();
  const config = testConfig(options.config);
  const open = (): Promise<Queue> =>
    openQueue({
      inMemory: true,
      config,
      clock,
      services: false,
      ...(options.backoffByKind ? { backoffByKind: options.backoffByKind } : {}),
    });
  const queue = await open();
  return {
    queue,
    clock,
    config,
    reopen: () => Promise.reject(new Error('the memory store does not survive a reopen')),
    close: () => queue.close(),
  };
};

export function tempDir(prefix = 'telha-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export const rocksHarness: HarnessFactory = async (options: HarnessOptions = {}): Promise<Harness> => {
  const clock = new ManualClock();
  const dir = tempDir();
  const config = testConfig(options.config, dir);
  const open = (): Promise<Queue> =>
    openQueue({
      config,
      clock,
      services: false,
      ...(options.backoffByKind ? { backoffByKind: options.backoffByKind } : {}),
    });
  let queue = await open();
  const harness: Harness = {
    get queue() {
      return queue;
    },
    clock,
    config,
    async reopen() {
      await queue.close();
      queue = await open();
      return queue;
    },
    async close() {
      await queue.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return harness;
};
