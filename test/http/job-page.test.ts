/**
 * The job page of a long job, over real sockets: a lease's alternating
 * heartbeats and progress reports read as one row with counts, the lease's
 * `leased` event is there however long it ran, numeric progress is a bar,
 * and a failure's stack trace sits under its message.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PermanentError, Worker } from '../../src/client/index.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { JobState, tenantScope } from '../../src/core/types.ts';
import { progressFraction } from '../../src/http/views/jobs.ts';
import { written } from '../support/events.ts';
import { Browser } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const acme = tenantScope('acme');

describe('the job page of a long job', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  /** The titles of the page's timeline rows, as text. */
  const titles = (text: string): string[] =>
    [...text.matchAll(/<span class="title">([^<]*)<\/span>/g)].map((m) => (m[1] ?? '').replace(/&#215;|&times;/g, '×'));

  it('folds ten minutes of heartbeats and progress into one row, and keeps the lease’s leased event', async () => {
    const { job } = await server.queue.enqueue({ kind: 'long.report' }, acme);
    const leased = await server.queue.leaseNext({ workerId: 'w-long', kinds: ['long.report'] });
    assert.equal(leased?.jobId, job.jobId);
    const fence = { workerId: 'w-long', leaseGeneration: leased.leaseGeneration };
    for (let i = 0; i < 60; i++) {
      await server.queue.heartbeat(job.jobId, fence);
      await server.queue.heartbeat(job.jobId, fence, { progress: JSON.stringify({ done: i + 1, total: 200 }) });
    }
    const page = await new Browser(server.http).get(`/jobs/${job.jobId}`);
    assert.equal(page.status, 200);
    const rows = titles(page.text);
    assert.equal(rows[0], 'Enqueued');
    assert.equal(rows[1], 'Older events folded');
    assert.equal(rows[2], 'Leased', 'the lease’s own event, though 120 came after it');
    assert.match(rows[3] ?? '', /^Heartbeats ×\d+ · progress reports ×\d+$/);
    assert.equal(rows.length, 4, `one row for the run: ${rows.join(' | ')}`);
    assert.match(page.text, /<progress max="1000" value="300">30%<\/progress>/, '60 of 200 as a bar');
    const leases = await new Browser(server.http).get('/leases');
    assert.match(
      leases.text,
      /<td><time datetime="[^"]+" title="[^"]+"\s*>[^<]+ago<\/time\s*><\/td>/,
      'Leased is dated',
    );
  });

  it('shows a failure’s stack trace, bounded, under its message', async () => {
    const { job } = await server.queue.enqueue({ kind: 'stack.fail' }, acme);
    const leased = await server.queue.leaseNext({ workerId: 'w-s', kinds: ['stack.fail'] });
    assert.equal(leased?.jobId, job.jobId);
    const stack = Array.from({ length: 50 }, (_, i) => `    at frame${i} (file:///app/handler.js:${i}:1)`);
    await server.queue.fail(
      job.jobId,
      { workerId: 'w-s', leaseGeneration: leased.leaseGeneration },
      { error: ['TypeError: cannot read x of undefined', ...stack].join('\n'), permanent: true },
    );
    const page = await new Browser(server.http).get(`/jobs/${job.jobId}`);
    assert.match(page.text, /<div class="message error">TypeError: cannot read x of undefined<\/div>/);
    const pre = (/<details class="stack">[\s\S]*?<pre>([\s\S]*?)<\/pre>/.exec(page.text)?.[1] ?? '').replace(/^\n/, ''); // a newline after <pre> is not content
    assert.ok(pre.startsWith('    at frame0 '), pre.slice(0, 80));
    assert.ok(pre.split('\n').length <= 41, 'at most 40 lines and a note of the rest');
  });

  it('shows the stack an SDK worker sent with its failure, and only the message in the list row', async () => {
    const { job } = await server.queue.enqueue({ kind: 'stack.sdk' }, acme);
    const failed = written(server.queue, 'the failure', (r) => r.jobId === job.jobId && r.state === JobState.Dead);
    const worker = new Worker({
      address: server.address,
      kinds: ['stack.sdk'],
      logger: silentLogger,
      handler: function renderInvoice() {
        throw new PermanentError('font cache corrupted');
      },
    }).start();
    await failed;
    await worker.close();
    const page = await new Browser(server.http).get(`/jobs/${job.jobId}`);
    assert.match(page.text, /<div class="message error">font cache corrupted<\/div>/);
    const pre = /<details class="stack">[\s\S]*?<pre>([\s\S]*?)<\/pre>/.exec(page.text)?.[1] ?? '';
    assert.match(pre, /at renderInvoice \(.*job-page\.test\.ts:\d+:\d+\)/, 'the frame that threw');
    const list = await new Browser(server.http).get('/jobs?state=dead&kind=stack.sdk');
    assert.match(list.text, /<span class="error-text"\s*>font cache corrupted<\/span\s*>/);
  });

  it('reads progress as a fraction only from the shapes it knows', () => {
    assert.equal(progressFraction('42'), 0.42);
    assert.equal(progressFraction('{"percent":12.5}'), 0.125);
    assert.equal(progressFraction('{"done":3,"total":4}'), 0.75);
    assert.equal(progressFraction('{"current":1,"total":0}'), null);
    assert.equal(progressFraction('{"sent":41,"of":100}'), null);
    assert.equal(progressFraction('150'), null);
    assert.equal(progressFraction('"half"'), null);
  });
});
