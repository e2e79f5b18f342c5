import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tenantScope } from '../../src/core/types.ts';
import { liveServer } from '../support/server.ts';

const acme = tenantScope('acme');

describe("the wire's effective attempt ceiling", () => {
  const { client } = liveServer({ jobs: { max_attempts: 5, kinds: { email: { max_attempts: 10 } } } });

  it("is the kind's max_attempts for a job of a configured prefix", async () => {
    const { job } = await client.enqueue({ kind: 'email:welcome' }, acme);
    assert.equal(job.effectiveMaxAttempts, 10);
    assert.equal((await client.show(job.jobId)).effectiveMaxAttempts, 10);
  });

  it("is jobs.max_attempts for any other kind, and the job's own ceiling wins over both", async () => {
    const other = await client.enqueue({ kind: 'report' }, acme);
    assert.equal(other.job.effectiveMaxAttempts, 5);
    const own = await client.enqueue({ kind: 'email:welcome', maxAttempts: 2 }, acme);
    assert.equal(own.job.effectiveMaxAttempts, 2);
  });
});
