/**
 * Watch messages laid out from events encoded once per log entry for all the server's watchers
 * (`WatchMessages`): the bytes are those of the message encoded whole, as the server wrote them
 * before; each watcher, tenant or operator, whatever its filter, gets the events its scope and
 * filter select and no other; and an entry is converted once however many watchers read it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { scopeToWire } from '../../src/client/convert.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { effectiveMaxAttempts } from '../../src/core/transitions.ts';
import { resultBytesOf, transitionOf, type LogEntry, type LogFilter } from '../../src/core/transitions-log.ts';
import { ANY_SCOPE, JobState, SYSTEM_SCOPE, tenantScope, type JobRecord } from '../../src/core/types.ts';
import {
  JobState as WireJobState,
  WatchRequestSchema,
  WatchResponseSchema,
  type WatchEvent,
  type WatchRequest,
} from '../../src/gen/telha/v1/queue_pb.ts';
import { Authenticator } from '../../src/edge/auth.ts';
import { jobToWire } from '../../src/server/convert.ts';
import { createQueueService, type QueueServiceHandlers } from '../../src/server/service.ts';
import { WatchMessages } from '../../src/server/watch-messages.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');
const bearer = (name: string): string => `Bearer ${name}-token-0123456789`;
let server: TestServer;
/** The job as the service converts it. */
const toWire = (job: JobRecord) => jobToWire(job, effectiveMaxAttempts(job, { config: server.queue.config.jobs }));

/** The message as the server encoded it before events were shared: built whole, then encoded. */
function encodedWhole(entries: readonly LogEntry[], resumeToken: string): Uint8Array {
  return toBinary(
    WatchResponseSchema,
    create(WatchResponseSchema, {
      events: entries.map(({ job, seq, position }) => {
        const { transition, detail, at } = transitionOf(job);
        const resultBytes = resultBytesOf(job);
        return {
          sequence: BigInt(seq),
          transition,
          ...(detail === null ? {} : { detail }),
          atUs: BigInt(at),
          job: toWire(job),
          resumeToken: position,
          ...(resultBytes === null ? {} : { resultBytes: BigInt(resultBytes) }),
        };
      }),
      resumeToken,
    }),
  );
}

describe('Watch messages shared among watchers', () => {
  let service: QueueServiceHandlers;

  before(async () => {
    server = await startTestServer({ server: { http_address: '' } });
    service = createQueueService({
      queue: server.queue,
      auth: new Authenticator([
        { token: 'acme-token-0123456789', role: 'tenant', tenant: 'acme' },
        { token: 'globex-token-0123456789', role: 'tenant', tenant: 'globex' },
        { token: 'operator-token-0123456789', role: 'operator' },
      ]),
      config: server.queue.config.server,
      logger: silentLogger,
      shutdown: new AbortController().signal,
    });
  });
  after(() => server.close());

  /** Transitions of every kind of entry: two tenants and the system scope, results small, big and none, a failure. */
  async function transitions(prefix: string): Promise<void> {
    const { queue } = server;
    await queue.enqueueBatch(
      [{ kind: `${prefix}mail.a` }, { kind: `${prefix}sms.b` }, { kind: `${prefix}mail.c` }],
      acme,
    );
    await queue.enqueueBatch([{ kind: `${prefix}mail.d` }, { kind: `${prefix}mail.e` }], globex);
    await queue.enqueue({ kind: `system:${prefix}sweep` }, SYSTEM_SCOPE);
    const results = [null, new Uint8Array([1, 2, 3]), new Uint8Array(5_000).fill(4)];
    for (const scope of [acme, globex]) {
      const leased = await queue.lease({ workerId: 'w', kinds: [prefix], scope, limit: 10 });
      for (const [i, job] of leased.entries()) {
        const fence = { workerId: 'w', leaseGeneration: job.leaseGeneration };
        if (i === 1 && scope === globex) await queue.fail(job.jobId, fence, { error: 'no', permanent: true });
        else {
          const result = results[i % results.length];
          await queue.complete(job.jobId, fence, result === null || result === undefined ? {} : { result });
        }
      }
    }
  }

  it('writes each message byte for byte as the whole message encodes', async () => {
    const from = await server.queue.feed.head();
    await transitions('bytes.');
    const page = await server.queue.feed.read(from, 100, { scope: ANY_SCOPE, kindPrefix: '', jobId: null });
    assert.equal(page.entries.length, 6 + 5 + 5, 'six enqueued, five leased, four completed and one dead');
    const messages = new WatchMessages(toWire);
    for (const entries of [page.entries, page.entries.slice(2, 5), []]) {
      assert.equal(
        Buffer.from(messages.message(entries, page.position)).toString('hex'),
        Buffer.from(encodedWhole(entries, page.position)).toString('hex'),
      );
    }
  });

  it('converts an entry once for all the watchers that read it', async () => {
    const from = await server.queue.feed.head();
    await transitions('once.');
    let converted = 0;
    const messages = new WatchMessages((job) => {
      converted++;
      return toWire(job);
    });
    const filters: LogFilter[] = [
      { scope: ANY_SCOPE, kindPrefix: '', jobId: null },
      { scope: acme, kindPrefix: '', jobId: null },
      { scope: globex, kindPrefix: 'once.mail.', jobId: null },
    ];
    const pages = await Promise.all(filters.map((filter) => server.queue.feed.read(from, 100, filter)));
    for (const page of pages) messages.message(page.entries, page.position);
    assert.equal(converted, pages[0]?.entries.length, 'each entry converted once, for three watchers');
  });

  it('gives each watcher, tenant or operator, the events its scope and filter select and no other', async () => {
    type Watcher = { name: string; request: WatchRequest; authorization: string; filter: LogFilter };
    const watchers: Watcher[] = [
      { name: 'acme', authorization: bearer('acme'), filter: { scope: acme, kindPrefix: '', jobId: null } },
      { name: 'globex', authorization: bearer('globex'), filter: { scope: globex, kindPrefix: '', jobId: null } },
      {
        name: 'acme mail',
        authorization: bearer('acme'),
        filter: { scope: acme, kindPrefix: 'scoped.mail.', jobId: null },
      },
      {
        name: 'acme outcomes',
        authorization: bearer('acme'),
        filter: { scope: acme, kindPrefix: '', jobId: null, states: new Set([JobState.Completed]) },
      },
      {
        name: 'operator, globex',
        authorization: bearer('operator'),
        filter: { scope: globex, kindPrefix: '', jobId: null },
      },
      {
        name: 'operator, every scope',
        authorization: bearer('operator'),
        filter: { scope: ANY_SCOPE, kindPrefix: 'scoped.', jobId: null },
      },
    ].map((w) => ({
      ...w,
      request: create(WatchRequestSchema, {
        ...(w.name === 'operator, globex' ? { scope: scopeToWire(globex) } : {}),
        kindPrefix: w.filter.kindPrefix,
        ...(w.filter.states === undefined ? {} : { states: [WireJobState.COMPLETED] }),
      }),
    }));
    const stop = new AbortController();
    const received = watchers.map(() => ({ opened: '', events: [] as WatchEvent[], onEvent: (): void => undefined }));
    const opened = watchers.map(
      (watcher, i) =>
        new Promise<void>((resolve, reject) => {
          const mine = received[i] as (typeof received)[number];
          service.watch(watcher.request, {
            authorization: watcher.authorization,
            signal: stop.signal,
            send: (bytes) => {
              const message = fromBinary(WatchResponseSchema, bytes);
              if (mine.opened === '') {
                mine.opened = message.resumeToken;
                resolve();
              }
              mine.events.push(...message.events);
              mine.onEvent();
              return Promise.resolve();
            },
            end: () => undefined,
            fail: (status) => reject(new Error(`${watcher.name}: ${status.message}`)),
          });
        }),
    );
    await Promise.all(opened);
    await transitions('scoped.');
    try {
      for (const [i, watcher] of watchers.entries()) {
        const mine = received[i] as (typeof received)[number];
        const page = await server.queue.feed.read(mine.opened, 100, watcher.filter);
        const expected = fromBinary(WatchResponseSchema, encodedWhole(page.entries, page.position)).events;
        assert.ok(expected.length > 0, `${watcher.name} has events to see`);
        await new Promise<void>((resolve) => {
          mine.onEvent = () => {
            if (mine.events.length >= expected.length) resolve();
          };
          mine.onEvent();
        });
        assert.deepEqual(mine.events, expected, watcher.name);
        if (watcher.authorization !== bearer('operator')) {
          const tenant = watcher.name.split(' ')[0];
          assert.ok(
            mine.events.every((event) => event.job?.tenant === tenant),
            `${watcher.name} saw only its tenant's jobs`,
          );
        }
      }
    } finally {
      stop.abort();
    }
  });
});
