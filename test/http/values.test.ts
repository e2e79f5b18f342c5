/**
 * A job's values on its page: a producer chooses the payload, the continuation, the progress and
 * the result, and none of them, however long or deep, makes the page large. Each shows its first
 * part, and its raw bytes download, to those who may read the job only.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import { tenantScope } from '../../src/core/types.ts';
import { MAX_SHOWN_DEPTH, prettyJson } from '../../src/http/views/values.ts';
import { Browser, dashboardServer } from '../support/http.ts';
import { TOKENS } from '../support/refuses.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');
const MIB = 1024 * 1024;

/** Arrays nested `depth` deep: `[[[…]]]`, two bytes a level. */
const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

describe("a job's values on its page", () => {
  const { server, signedIn } = dashboardServer({
    jobs: { max_attempts: 1_000, backoff_base_secs: 0, max_result_bytes: 1 * MIB },
  });
  let operator: Browser;

  before(async () => {
    operator = await signedIn(TOKENS.operator);
  });

  /** A job of `scope` leased now, with its fence. */
  const leased = async (kind: string, scope = acme, payload?: string | Uint8Array) => {
    const { job } = await server.queue.enqueue({ kind, ...(payload === undefined ? {} : { payload }) }, scope);
    const lease = await server.queue.leaseNext({ workerId: 'worker-v', kinds: [kind] });
    assert.equal(lease?.jobId, job.jobId);
    return { jobId: job.jobId, fence: { workerId: 'worker-v', leaseGeneration: lease.leaseGeneration } };
  };

  it('keeps the page of an 8,000-byte payload nested 4,000 deep under 1 MiB, showing its start', async () => {
    const { job } = await server.queue.enqueue({ kind: 'values.nested', payload: nested(4_000) }, acme);
    const page = await operator.get(`/jobs/${job.jobId}`);
    assert.equal(page.status, 200);
    assert.ok(Buffer.byteLength(page.text) < MIB, `a page of ${Buffer.byteLength(page.text)} bytes`);
    assert.ok(page.text.includes('<pre class="payload">[\n  [\n    [\n      ['), 'the start, pretty-printed');
    assert.ok(page.text.includes(`href="/jobs/${job.jobId}/raw/payload"`), 'a link to the raw payload');
  });

  it('keeps the page of a 4,000-character progress report under 1 MiB, showing its start', async () => {
    const { jobId, fence } = await leased('values.progress');
    await server.queue.heartbeat(jobId, fence, { progress: nested(2_000) });
    const page = await operator.get(`/jobs/${jobId}`);
    assert.equal(page.status, 200);
    assert.ok(Buffer.byteLength(page.text) < MIB, `a page of ${Buffer.byteLength(page.text)} bytes`);
    assert.ok(page.text.includes('<pre class="payload">[\n  [\n    ['), 'the start, pretty-printed');
    assert.ok(page.text.includes(`href="/jobs/${jobId}/raw/progress"`), 'a link to the raw progress');
  });

  it('keeps a page under 1 MiB whatever the job holds, and says what it cut', async () => {
    // Every value as long as the limits allow, of the character that escapes longest (`"`, 6 bytes).
    const quotes = '"'.repeat(MIB);
    const { jobId, fence } = await leased('values.everything', acme, quotes.slice(0, MIB - 1));
    let current = fence;
    // A full audit trail: a failure per attempt, each with the longest error an event keeps.
    for (let attempt = 0; attempt < 70; attempt++) {
      await server.queue.fail(jobId, current, { error: quotes.slice(0, 2_000) });
      const again = await server.queue.leaseNext({ workerId: 'worker-v', kinds: ['values.everything'] });
      assert.equal(again?.jobId, jobId);
      current = { workerId: 'worker-v', leaseGeneration: again.leaseGeneration };
    }
    await server.queue.checkpoint(jobId, current, Buffer.from(quotes.slice(0, MIB - 1)));
    await server.queue.heartbeat(jobId, current, { progress: JSON.stringify('"'.repeat(2_047)) });
    const working = await operator.get(`/jobs/${jobId}`);
    // Completing drops the continuation: the result comes in its place.
    await server.queue.complete(jobId, current, { result: Buffer.from(quotes.slice(0, MIB - 1)) });
    const done = await operator.get(`/jobs/${jobId}`);
    for (const [page, values] of [
      [working, ['payload', 'continuation', 'progress']],
      [done, ['payload', 'progress', 'result']],
    ] as const) {
      assert.equal(page.status, 200);
      assert.ok(Buffer.byteLength(page.text) < MIB, `a page of ${Buffer.byteLength(page.text)} bytes`);
      assert.ok(page.text.includes('Truncated: showing the first 16,384 of 1,048,575 bytes'), 'the cut is said');
      for (const value of values) {
        assert.ok(page.text.includes(`href="/jobs/${jobId}/raw/${value}"`), `a link to the raw ${value}`);
      }
    }
  });

  it('downloads each value raw: its exact bytes, as an attachment, under the same policy as the pages', async () => {
    const binary = Uint8Array.from({ length: 256 }, (_, i) => i);
    const { jobId, fence } = await leased('values.raw', acme, binary);
    const continuation = Buffer.from(nested(3_000));
    await server.queue.checkpoint(jobId, fence, continuation);
    const progress = '{"step":"<b>upload</b>","done":0.5}';
    await server.queue.heartbeat(jobId, fence, { progress });
    const download = async (value: string, bytes: Uint8Array, type: string, extension: string): Promise<void> => {
      const reply = await fetch(`${server.http}/jobs/${jobId}/raw/${value}`, {
        headers: { cookie: operator.cookie ?? '' },
      });
      assert.equal(reply.status, 200, value);
      assert.deepEqual(new Uint8Array(await reply.arrayBuffer()), new Uint8Array(bytes), `the ${value}'s bytes`);
      assert.equal(reply.headers.get('content-type'), type, value);
      const disposition = `attachment; filename="${jobId}.${value}.${extension}"`;
      assert.equal(reply.headers.get('content-disposition'), disposition, value);
      assert.equal(reply.headers.get('x-content-type-options'), 'nosniff', value);
      assert.match(reply.headers.get('content-security-policy') ?? '', /default-src 'self'/, value);
    };
    await download('payload', binary, 'application/octet-stream', 'bin');
    await download('continuation', continuation, 'application/octet-stream', 'bin');
    await download('progress', Buffer.from(progress), 'application/json; charset=utf-8', 'json');
    const result = Buffer.from('{"html":"<script>alert(1)</script>"}');
    await server.queue.complete(jobId, fence, { result });
    await download('result', result, 'application/octet-stream', 'bin');
  });

  it('answers not found for a value the job does not have, and 400 for a name it cannot have', async () => {
    const { job } = await server.queue.enqueue({ kind: 'values.bare' }, acme);
    assert.equal((await operator.get(`/jobs/${job.jobId}/raw/result`)).status, 404);
    const bad = await operator.get(`/jobs/${job.jobId}/raw/secrets`);
    assert.equal(bad.status, 400);
    assert.ok(bad.text.includes('value:'), 'names the parameter');
  });

  it("gives a tenant not found for another tenant's raw value, and no one without a session any", async () => {
    const { job: other } = await server.queue.enqueue({ kind: 'values.other', payload: 'globex only' }, globex);
    const { job: own } = await server.queue.enqueue({ kind: 'values.own', payload: 'acme only' }, acme);
    const tenant = new Browser(server.http);
    assert.equal((await tenant.login(TOKENS.acme)).status, 303);
    const refused = await tenant.get(`/jobs/${other.jobId}/raw/payload`);
    assert.equal(refused.status, 404);
    assert.ok(!refused.text.includes('globex only'));
    assert.equal((await tenant.get(`/jobs/${own.jobId}/raw/payload`)).text, 'acme only');
    const anonymous = await new Browser(server.http).get(`/jobs/${own.jobId}/raw/payload`);
    assert.equal(anonymous.status, 303);
    assert.equal(anonymous.headers.get('location'), '/login');
  });
});

describe('the JSON printer of a job page', () => {
  it('lays out any value as JSON.stringify(value, null, 2) does, within its depth', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: MAX_SHOWN_DEPTH }), (value) => {
        const text = JSON.stringify(value);
        assert.deepEqual(prettyJson(text, Infinity), { text: JSON.stringify(value, null, 2), read: text.length });
      }),
    );
  });

  it('writes deeper levels on their parent’s line, still the same JSON', () => {
    const deep = JSON.parse(`${'['.repeat(40)}{"a": [1, "x"]}${']'.repeat(40)}`) as unknown;
    const { text } = prettyJson(JSON.stringify(deep), Infinity);
    assert.deepEqual(JSON.parse(text), deep);
    assert.equal(text.split('\n').length, 2 * MAX_SHOWN_DEPTH + 1, 'a line a level, each way, to its depth');
  });

  it('stops at its budget, saying how much of the text it showed', () => {
    const text = JSON.stringify({ note: 'x'.repeat(100), more: [1, 2, 3] });
    const shown = prettyJson(text, 50);
    assert.equal(shown.text.length, 50);
    assert.ok(shown.text.startsWith('{\n  "note": "xxx'));
    assert.equal(text.slice(0, shown.read), '{"note":"' + 'x'.repeat(shown.read - 9));
  });
});
