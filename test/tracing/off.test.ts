/**
 * Traces off: with no OpenTelemetry SDK registered (this file registers none, and node:test runs
 * each file in its own process), enqueues carry no trace context and a job's record holds no
 * trace field, so its bytes are what they were before traces existed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TelhaClient } from '../../src/client/client.ts';
import { encodeRecord } from '../../src/codec/value.ts';
import { tenantScope } from '../../src/core/types.ts';
import { liveServer } from '../support/server.ts';

const acme = tenantScope('acme');

describe('traces off', () => {
  const live = liveServer();

  it('enqueues through the client and the engine with no trace context and no trace field in the record', async () => {
    const client: TelhaClient = live.client;
    const { job: remote } = await client.enqueue({ kind: 'untraced' }, acme);
    const { job: local } = await live.server.queue.enqueue({ kind: 'untraced' }, acme);
    for (const jobId of [remote.jobId, local.jobId]) {
      const stored = await live.server.queue.show(jobId);
      assert.equal(stored.traceContext, null);
      assert.equal(encodeRecord(stored).includes('traceparent'), false);
    }
  });
});
