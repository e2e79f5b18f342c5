/**
 * The overview's Blocked keys panel over real sockets: an ordered key whose dead head blocks it
 * is listed, and its Release button (the session's CSRF token, ReleaseKey's permission and scope
 * rules) lets the next job run; the job page shows a job's key.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { tenantScope, type JobRecord } from '../../src/core/types.ts';
import { Browser } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { TOKEN_ROLES, TOKENS } from '../support/refuses.ts';

const acme = tenantScope('acme');

describe('the Blocked keys panel', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer({ server: { tokens: [...TOKEN_ROLES] } });
  });
  after(() => server.close());

  const signedIn = (token: string): Promise<Browser> => Browser.signedIn(server.http, token);

  /** Two jobs of `key` in acme, the first dead: the key is blocked, the second waits. */
  const blocked = async (key: string): Promise<{ head: JobRecord; next: JobRecord }> => {
    const head = (await server.queue.enqueue({ kind: `ledger.${key}`, orderKey: key }, acme)).job;
    const next = (await server.queue.enqueue({ kind: `ledger.${key}`, orderKey: key }, acme)).job;
    const leased = await server.queue.leaseNext({ workerId: 'w', scope: acme, kinds: [`ledger.${key}`] });
    assert.equal(leased?.jobId, head.jobId);
    await server.queue.fail(
      head.jobId,
      { workerId: 'w', leaseGeneration: leased.leaseGeneration },
      {
        error: 'boom',
        permanent: true,
      },
    );
    return { head, next };
  };

  it('lists a blocked key with its dead head, and releases it with the session’s token', async () => {
    const { head, next } = await blocked('account-1');
    const browser = await signedIn(TOKENS.operator);
    const page = await browser.get('/');
    assert.match(page.text, /id="keys"/);
    assert.match(page.text, /account-1<\/td>\s*<td>tenant acme<\/td>/);
    assert.ok(page.text.includes(`href="/jobs/${head.jobId}"`), 'the dead head is linked');
    const jobPage = await browser.get(`/jobs/${next.jobId}`);
    assert.match(jobPage.text, /Order key/);
    assert.match(jobPage.text, /waiting for its turn/);
    assert.equal(
      (await browser.post('/keys/release', { order_key: 'account-1', scope: 'tenant:acme' })).status,
      403,
      'no CSRF token',
    );
    assert.equal((await server.queue.blockedKeys(acme)).length, 1, 'nothing released by a refused request');
    const csrf = await browser.csrf();
    const reply = await browser.post('/keys/release', { _csrf: csrf, order_key: 'account-1', scope: 'tenant:acme' });
    assert.equal(reply.status, 303);
    assert.equal(reply.headers.get('location'), '/#keys');
    assert.deepEqual(await server.queue.blockedKeys(acme), []);
    assert.equal((await server.queue.show(next.jobId)).notBefore, null, 'the next job’s turn came');
    assert.match((await browser.get('/')).text, /No blocked keys\./);
  });

  it('refuses another tenant’s key, and answers a key that is not blocked in the panel', async () => {
    await blocked('account-2');
    const globex = await signedIn(TOKENS.globex);
    assert.doesNotMatch((await globex.get('/')).text, /account-2/, 'another tenant does not see it');
    const csrf = await globex.csrf();
    const other = await globex.post('/keys/release', { _csrf: csrf, order_key: 'account-2', scope: 'tenant:acme' });
    assert.equal(other.status, 403);
    assert.equal((await server.queue.blockedKeys(acme)).length, 1);
    const acmeBrowser = await signedIn(TOKENS.acme);
    const token = await acmeBrowser.csrf();
    assert.equal((await acmeBrowser.post('/keys/release', { _csrf: token, order_key: 'account-2' })).status, 303);
    const again = await acmeBrowser.post('/keys/release', { _csrf: token, order_key: 'account-2' });
    assert.equal(again.status, 409, 'failed_precondition, as the panel says');
    assert.match(again.text, /not blocked/);
  });
});
