/**
 * Lists an operator works from, over real sockets: the last error on the
 * rows that failed, a job-id box that opens the job (and tells a tenant
 * nothing of another tenant's), and a filter the server refuses answered
 * with its message where the rows go.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tenantScope, type QueueScope } from '../../src/core/types.ts';
import { dashboardServer } from '../support/http.ts';
import { TOKENS } from '../support/refuses.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');

describe('the jobs list as an operator works from it', () => {
  const { server, signedIn } = dashboardServer();

  /** A job of its own kind that failed once with `error`: permanently (Dead) or not (Pending again). */
  const failed = async (kind: string, error: string, permanent: boolean, scope: QueueScope = acme) => {
    const { job } = await server.queue.enqueue({ kind, maxAttempts: 5 }, scope);
    const leased = await server.queue.leaseNext({ workerId: 'w-1', kinds: [kind], scope });
    assert.equal(leased?.jobId, job.jobId);
    return server.queue.fail(
      job.jobId,
      { workerId: 'w-1', leaseGeneration: leased.leaseGeneration },
      { error, permanent },
    );
  };

  /** The text of each row's Last error cell, by job id. */
  const lastErrors = (text: string): Map<string, string> => {
    const rows = new Map<string, string>();
    for (const row of text.matchAll(/<tr>([\s\S]*?)<\/tr>/g)) {
      const id = /href="\/jobs\/([0-9a-f-]{36})"/.exec(row[1] ?? '')?.[1];
      const cell = /<td class="last-error">([\s\S]*?)<\/td>/.exec(row[1] ?? '')?.[1];
      if (id !== undefined && cell !== undefined) rows.set(id, cell.replace(/<[^>]*>/g, '').trim());
    }
    return rows;
  };

  it('shows the last error on Dead and retried rows, and none on a completed job that once failed', async () => {
    const dead = await failed('errs.dead', 'mailbox does not exist', true);
    const retried = await failed('errs.retried', 'SMTP timeout <b>', false);
    const once = await failed('errs.done', 'first try failed', false);
    // Past its backoff, the job that failed once runs again and completes.
    server.clock.advance(3_600_000_000);
    const leasedAgain = await server.queue.leaseNext({ workerId: 'w-2', kinds: ['errs.done'], scope: acme });
    assert.equal(leasedAgain?.jobId, once.jobId);
    await server.queue.complete(once.jobId, { workerId: 'w-2', leaseGeneration: leasedAgain.leaseGeneration });
    const browser = await signedIn(TOKENS.operator);
    const page = await browser.get('/jobs?kind=errs.');
    assert.equal(page.status, 200);
    assert.match(page.text, /<th>Last error<\/th>/);
    const errors = lastErrors(page.text);
    assert.equal(errors.get(dead.jobId), 'mailbox does not exist');
    assert.equal(errors.get(retried.jobId), 'SMTP timeout &lt;b&gt;', 'escaped, never markup');
    assert.equal(errors.get(once.jobId), '', 'a completed job shows no old error');
    const healthy = await browser.get('/jobs?kind=errs.done');
    assert.doesNotMatch(healthy.text, /Last error/, 'no column when no row on the page failed');
  });

  it('opens a job from the job-id box, trimmed and in any case', async () => {
    const { job } = await server.queue.enqueue({ kind: 'find.me' }, acme);
    const browser = await signedIn(TOKENS.operator);
    const reply = await browser.get(`/jobs/find?id=${encodeURIComponent(` ${job.jobId.toUpperCase()} `)}`);
    assert.equal(reply.status, 303);
    assert.equal(reply.headers.get('location'), `/jobs/${job.jobId}`);
    assert.match((await browser.get('/jobs')).text, /action="\/jobs\/find"/, 'the box is on the Jobs page');
  });

  it('answers an id that opens no job with a message, the same for a missing job and another tenant’s', async () => {
    const { job: theirs } = await server.queue.enqueue({ kind: 'find.theirs' }, globex);
    const missing = '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    const tenant = await signedIn(TOKENS.acme);
    const other = await tenant.get(`/jobs/find?id=${theirs.jobId}`);
    const none = await tenant.get(`/jobs/find?id=${missing}`);
    assert.equal(other.status, 404);
    assert.equal(none.status, 404);
    const message = (text: string, id: string) =>
      /<div class="notice error" role="alert">([^<]*)<\/div>/.exec(text)?.[1]?.replace(id, '<id>');
    assert.equal(message(other.text, theirs.jobId), 'No job <id> here.');
    assert.equal(message(none.text, missing), 'No job <id> here.');
    assert.ok(!other.text.includes('find.theirs'), 'nothing of the other tenant’s job shows');
    const garbage = await tenant.get('/jobs/find?id=not-an-id');
    assert.equal(garbage.status, 400);
    assert.match(garbage.text, /&quot;not-an-id&quot; is not a job id/);
    assert.match(garbage.text, /value="not-an-id"/, 'the box keeps what was typed');
  });

  it('answers a filter value it refuses with the message where the rows go, and the values as typed', async () => {
    const browser = await signedIn(TOKENS.operator);
    for (const [query, field] of [
      ['state=bogus&kind=errs.', 'state'],
      ['kind=a%20b', 'kind'],
      ['created_after=yesterday', 'created_after'],
      ['page_token=not-a-token', 'page_token'],
    ] as const) {
      const reply = await browser.get(`/jobs?${query}`);
      assert.equal(reply.status, 400, query);
      const results = /<div id="results">([\s\S]*?)<\/div>\s*<\/div>/.exec(reply.text)?.[1] ?? '';
      assert.match(results, /class="notice error"/, `${query}: the message is where the rows go`);
      assert.ok(results.includes(`${field}:`), `${query}: names ${field}: ${results}`);
      assert.doesNotMatch(results, /<table/, `${query}: no rows`);
    }
    const typed = await browser.get('/jobs?kind=a%20b&created_after=yesterday');
    assert.match(typed.text, /name="kind" value="a b"/, 'the form shows what was sent');
  });
});
