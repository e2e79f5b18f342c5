/**
 * Typed tasks and the multi-task `Worker` against a live server: the producer refuses bad
 * data before writing anything, a handler gets its data typed, a bad payload that slipped
 * past is dead-lettered at once, each kind goes to its task's handler, and a task's own
 * concurrency holds while the worker's other tasks run beside it. Waits on the worker's
 * events and on promises the handlers resolve, never on time.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { z } from 'zod';
import { defineTask, resultJson, silentLogger, Worker, type JobRecord } from '../../src/client/index.ts';
import { ErrorCode, TelhaError } from '../../src/core/errors.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { LocalWorker } from '../../src/engine/worker.ts';
import { freePort, liveServerPerTest } from '../support/server.ts';

const acme = tenantScope('acme');
const sendEmail = defineTask('email.send', z.object({ to: z.email(), subject: z.string().default('hello') }));
const resize = defineTask('image.resize', z.object({ url: z.url(), width: z.number().int().positive() }));

/** Resolves with the first `count` jobs the worker reports through `event`. */
function heard(worker: Worker, event: 'completed' | 'failed', count: number): Promise<JobRecord[]> {
  return new Promise((resolve) => {
    const jobs: JobRecord[] = [];
    worker.on(event, (job: JobRecord, ..._rest: unknown[]) => {
      jobs.push(job);
      if (jobs.length === count) resolve(jobs);
    });
  });
}

describe('typed tasks through the SDK and a live server', () => {
  let worker: Worker | null = null;

  afterEach(async () => {
    await worker?.close(1_000);
    worker = null;
  });
  // After the hook above, so each test's worker has stopped before its server closes.
  const { server, client } = liveServerPerTest({ server: { http_address: '' } });

  it('refuses data that fails the schema with invalid_argument naming the field, and writes nothing', async () => {
    const refused = await sendEmail.enqueue(client, { to: 'not an address' }, {}, acme).then(
      () => assert.fail('expected a refusal'),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof TelhaError);
    assert.equal(refused.code, ErrorCode.InvalidArgument);
    assert.equal(refused.field, 'payload.to');
    assert.deepEqual((await client.list({ scope: acme })).jobs, []);
  });

  it('hands the handler its data typed, and stores what it returns', async () => {
    const { job } = await sendEmail.enqueue(client, { to: 'ann@example.com' }, { priority: 1 }, acme);
    assert.equal(job.kind, 'email.send');
    assert.equal(job.priority, 1);
    worker = new Worker({
      address: server.address,
      logger: silentLogger,
      tasks: [
        sendEmail.handle((email) => {
          const to: string = email.data.to; // typed by the schema
          return Promise.resolve({ sent: to, subject: email.data.subject });
        }),
      ],
    });
    const completed = heard(worker, 'completed', 1);
    worker.start();
    assert.deepEqual(
      (await completed).map((j) => j.jobId),
      [job.jobId],
    );
    const shown = await client.show(job.jobId);
    assert.equal(shown.state, JobState.Completed);
    assert.deepEqual(resultJson(shown), { sent: 'ann@example.com', subject: 'hello' });
  });

  it('dead-letters at once a payload that fails the schema, with the validation error in its events', async () => {
    // As an old producer would: the raw bytes, past the task's check.
    const { job } = await client.enqueue({ kind: 'email.send', payload: '{"to":"nope"}', maxAttempts: 5 }, acme);
    let ran = 0;
    worker = new Worker({
      address: server.address,
      logger: silentLogger,
      tasks: [sendEmail.handle(() => Promise.resolve(void ran++))],
    });
    const failures: { error: Error; permanent: boolean }[] = [];
    worker.on('failed', (_job, error, { permanent }) => failures.push({ error, permanent }));
    const failed = heard(worker, 'failed', 1);
    worker.start();
    await failed;
    assert.equal(ran, 0);
    assert.equal(failures[0]?.permanent, true);
    assert.match(failures[0]?.error.message ?? '', /payload\.to/);
    const shown = await client.show(job.jobId);
    assert.equal(shown.state, JobState.Dead);
    assert.equal(shown.attempts, 1);
    const trail = shown.events.filter((e) => e.detail !== null && /payload\.to/.test(e.detail));
    assert.ok(trail.length > 0, `no event names the field: ${JSON.stringify(shown.events)}`);
  });

  it('serves several tasks from one worker, each kind to its handler, a task held to its own concurrency', async () => {
    // image.resize runs one at a time; email.send beside it. Each email waits until a resize has
    // started, and a resize waits until an email has run beside it: both must run together.
    let resizing = 0;
    let mostResizing = 0;
    let overlapped = false;
    let resizeStarted!: () => void;
    const aResizeStarted = new Promise<void>((resolve) => (resizeStarted = resolve));
    let emailBeside!: () => void;
    const anEmailBeside = new Promise<void>((resolve) => (emailBeside = resolve));
    const seen: string[] = [];
    worker = new Worker({
      address: server.address,
      logger: silentLogger,
      concurrency: 4,
      tasks: [
        resize.handle(
          async (image) => {
            seen.push(`${image.kind} ${image.data.width}`);
            resizing++;
            mostResizing = Math.max(mostResizing, resizing);
            resizeStarted();
            await anEmailBeside;
            resizing--;
          },
          { concurrency: 1 },
        ),
        sendEmail.handle(async (email) => {
          seen.push(`${email.kind} ${email.data.to}`);
          await aResizeStarted;
          if (resizing > 0) {
            overlapped = true;
            emailBeside();
          }
        }),
      ],
    });
    const completed = heard(worker, 'completed', 6);
    for (const width of [1, 2, 3]) {
      await resize.enqueue(client, { url: 'https://example.com/a.png', width }, {}, acme);
      await sendEmail.enqueue(client, { to: `u${width}@example.com` }, {}, acme);
    }
    worker.start();
    await completed;
    assert.equal(mostResizing, 1);
    assert.ok(overlapped);
    assert.deepEqual(seen.toSorted(), [
      'email.send u1@example.com',
      'email.send u2@example.com',
      'email.send u3@example.com',
      'image.resize 1',
      'image.resize 2',
      'image.resize 3',
    ]);
  });

  it("keeps other tasks running while a task's backlog waits for its own slot", { timeout: 30_000 }, async () => {
    // Three resizes ahead of one email, two slots, resizes one at a time: the resizes waiting
    // for their task's slot must not hold the worker's second slot, or the email never comes.
    let resizing = 0;
    let mostResizing = 0;
    let emailBeside!: () => void;
    const anEmailBeside = new Promise<void>((resolve) => (emailBeside = resolve));
    worker = new Worker({
      address: server.address,
      logger: silentLogger,
      concurrency: 2,
      prefetch: 0,
      tasks: [
        resize.handle(
          async () => {
            resizing++;
            mostResizing = Math.max(mostResizing, resizing);
            await anEmailBeside;
            resizing--;
          },
          { concurrency: 1 },
        ),
        sendEmail.handle(() => {
          if (resizing > 0) emailBeside();
          return Promise.resolve();
        }),
      ],
    });
    const completed = heard(worker, 'completed', 4);
    for (const width of [1, 2, 3]) await resize.enqueue(client, { url: 'https://example.com/a.png', width }, {}, acme);
    await sendEmail.enqueue(client, { to: 'ann@example.com' }, {}, acme);
    worker.start();
    await completed;
    assert.equal(mostResizing, 1);
  });

  it('runs typed tasks in process too: enqueued on a Queue, served by a LocalWorker', async () => {
    const { job } = await sendEmail.enqueue(server.queue, { to: 'bob@example.com' }, {}, acme);
    await assert.rejects(sendEmail.enqueue(server.queue, { to: 'bob' }, {}, acme), { field: 'payload.to' });
    const local = new LocalWorker(server.queue, {
      scope: acme,
      logger: silentLogger,
      tasks: [sendEmail.handle((email) => Promise.resolve(email.data.to))],
    });
    const completed = new Promise<JobRecord>((resolve) => local.on('completed', resolve));
    local.start();
    try {
      assert.equal((await completed).jobId, job.jobId);
    } finally {
      await local.close(1_000);
    }
    assert.equal(resultJson(await client.show(job.jobId)), 'bob@example.com');
  });

  it("reports a server it cannot reach through the 'error' event, as through onError", async () => {
    const address = `127.0.0.1:${await freePort()}`;
    let hooked: Error | null = null;
    worker = new Worker({
      address,
      logger: silentLogger,
      tasks: [sendEmail.handle(async () => {})],
      onError: (error) => (hooked = error),
    });
    const reported = new Promise<Error>((resolve) => worker?.on('error', resolve));
    worker.start();
    const error = await reported;
    assert.ok(error instanceof TelhaError);
    assert.equal(error.code, ErrorCode.Unavailable);
    assert.match(error.message, new RegExp(`cannot reach the Telha server at ${address.replace(/\./g, '\\.')}`));
    assert.equal(hooked, error);
  });
});
