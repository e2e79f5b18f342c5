/**
 * The Work stream's server side without a socket: a session fed messages by
 * the test, over a real queue whose store the test can hold at the claim, so
 * a lease can be caught in flight at the moment the worker half-closes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { makeConfig } from '../../src/core/config.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { JobState, tenantScope, type JobRecord } from '../../src/core/types.ts';
import { Queue } from '../../src/engine/queue.ts';
import { WorkRequestSchema } from '../../src/gen/telha/v1/queue_pb.ts';
import { Authenticator } from '../../src/edge/auth.ts';
import { createQueueService } from '../../src/server/service.ts';
import type { WorkStream } from '../../src/server/work-session.ts';
import { MemoryJobStore } from '../../src/storage/memory/memory-store.ts';
import type { ClaimParams } from '../../src/storage/types.ts';

const acme = tenantScope('acme');

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** The memory store, with each claim held until the test lets it go. */
class HeldClaims extends MemoryJobStore {
  readonly claiming = deferred();
  readonly letGo = deferred();

  override async claim(params: ClaimParams): Promise<JobRecord[]> {
    this.claiming.resolve();
    await this.letGo.promise;
    return super.claim(params);
  }
}

describe('a Work session on the server', () => {
  it('releases, never pushes, the jobs a lease in flight returns after the worker half-closed', async () => {
    const store = new HeldClaims();
    const config = makeConfig({ retention: { enabled: false } });
    const queue = new Queue({ store, config, services: false });
    try {
      const ids = (await queue.enqueueBatch([{ kind: 'k' }, { kind: 'k' }, { kind: 'k' }], acme)).map(
        (r) => r.job.jobId,
      );
      const service = createQueueService({
        queue,
        auth: new Authenticator([]),
        config: config.server,
        logger: silentLogger,
        shutdown: new AbortController().signal,
      });
      const pushed: unknown[] = [];
      const ended = deferred();
      const stream: WorkStream = {
        authorization: null,
        signal: new AbortController().signal,
        opened: () => {},
        send: (message) => pushed.push(message),
        end: () => ended.resolve(),
        fail: (status) => assert.fail(`the stream failed: ${status.message}`),
      };
      const session = service.openWork(stream);
      session.receive(create(WorkRequestSchema, { open: { workerId: 'w1', kinds: ['k'] }, credit: 10 }));
      await store.claiming.promise;
      // The worker stops while its lease is on its way.
      session.finish();
      store.letGo.resolve();
      await ended.promise;
      assert.deepEqual(pushed, []);
      for (const id of ids) {
        const job = await queue.show(id);
        assert.equal(job.state, JobState.Pending);
        assert.equal(job.attempts, 0);
        assert.deepEqual(
          job.events.map((e) => e.transition),
          ['enqueued', 'leased', 'released'],
        );
      }
    } finally {
      await queue.close();
    }
  });
});
