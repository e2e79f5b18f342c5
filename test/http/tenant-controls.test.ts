/**
 * The overview's tenant limits panel over real sockets: set, replace and clear a tenant limit
 * (operators only), with the session's CSRF token and SetTenantLimit's permission; a refused
 * input answers with its message in the panel, the values as typed, and nothing written.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { Browser } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { TOKEN_ROLES, TOKENS } from '../support/refuses.ts';

describe('the overview’s tenant limits', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer({ server: { tokens: [...TOKEN_ROLES] } });
  });
  after(() => server.close());
  afterEach(async () => {
    for (const limit of await server.queue.tenantLimits()) await server.queue.clearTenantLimit(limit.tenant);
  });

  const signedIn = async (token: string): Promise<Browser> => {
    const browser = new Browser(server.http);
    assert.equal((await browser.login(token)).status, 303);
    return browser;
  };

  it('sets, replaces and clears a tenant limit from an operator’s overview', async () => {
    const browser = await signedIn(TOKENS.operator);
    const csrf = await browser.csrf();
    const set = await browser.post('/tenant-limits/set', {
      _csrf: csrf,
      tenant: 'acme',
      concurrency: '5',
      rate: '',
      weight: '3',
    });
    assert.equal(set.status, 303);
    assert.equal(set.headers.get('location'), '/#tenant-limits');
    let [limit] = await server.queue.tenantLimits();
    assert.deepEqual(
      [limit?.tenant, limit?.concurrency, limit?.rate, limit?.weight, limit?.by],
      ['acme', 5, null, 3, 'ops'],
    );
    const page = await browser.get('/');
    assert.match(page.text, /<tr data-tenant="acme">\s*<td class="mono">acme<\/td>\s*<td class="num">3<\/td>/);
    const changed = await browser.post('/tenant-limits/set', {
      _csrf: csrf,
      tenant: 'acme',
      concurrency: '',
      rate: '10/1m',
      weight: '',
    });
    assert.equal(changed.status, 303);
    [limit] = await server.queue.tenantLimits();
    assert.deepEqual([limit?.concurrency, limit?.rate, limit?.weight], [null, { count: 10, periodMs: 60_000 }, 1]);
    assert.equal((await browser.post('/tenant-limits/clear', { _csrf: csrf, tenant: 'acme' })).status, 303);
    assert.deepEqual(await server.queue.tenantLimits(), []);
  });

  it('answers a bad tenant limit with the field’s name in its panel and writes nothing', async () => {
    await server.queue.setTenantLimit({ tenant: 'acme', concurrency: 5 });
    const browser = await signedIn(TOKENS.operator);
    const csrf = await browser.csrf();
    const cases: [Record<string, string>, RegExp][] = [
      [{ tenant: 'acme', concurrency: 'many' }, /concurrency: &quot;many&quot; is not a whole number/],
      [{ tenant: 'acme', weight: '0' }, /weight: must be a whole number from 1 to 1000/],
      [{ tenant: 'acme', weight: '5000' }, /weight: /],
      [{ tenant: 'acme', rate: 'lots/s' }, /rate: &quot;lots\/s&quot; is not a rate/],
      [{ tenant: 'acme' }, /concurrency: set a concurrency, a rate or a weight/],
      [{ tenant: '', concurrency: '3' }, /tenant: /],
    ];
    for (const [form, message] of cases) {
      const reply = await browser.post('/tenant-limits/set', { _csrf: csrf, ...form });
      assert.equal(reply.status, 400, JSON.stringify(form));
      assert.match(reply.text, /id="tenant-limits"[\s\S]*role="alert">/);
      assert.match(reply.text, message);
    }
    const kept = await browser.post('/tenant-limits/set', { _csrf: csrf, tenant: 'acme', weight: 'x9' });
    assert.match(kept.text, /name="weight" inputmode="numeric" value="x9"/, 'as typed');
    assert.deepEqual(
      (await server.queue.tenantLimits()).map((l) => [l.tenant, l.concurrency, l.weight]),
      [['acme', 5, 1]],
      'nothing written',
    );
    const missing = await browser.post('/tenant-limits/clear', { _csrf: csrf, tenant: 'globex' });
    assert.equal(missing.status, 404);
  });

  it('keeps tenant limits to operators: a tenant neither sees nor sets them, and CSRF is required', async () => {
    const browser = await signedIn(TOKENS.acme);
    assert.ok(!(await browser.get('/')).text.includes('action="/tenant-limits/set"'));
    const csrf = await browser.csrf();
    const refused = await browser.post('/tenant-limits/set', { _csrf: csrf, tenant: 'acme', weight: '9' });
    assert.equal(refused.status, 403);
    await server.queue.setTenantLimit({ tenant: 'acme', weight: 2 });
    assert.equal((await browser.post('/tenant-limits/clear', { _csrf: csrf, tenant: 'acme' })).status, 403);
    const operator = await signedIn(TOKENS.operator);
    assert.equal((await operator.post('/tenant-limits/set', { tenant: 'x', weight: '2' })).status, 403, 'CSRF');
    assert.deepEqual(
      (await server.queue.tenantLimits()).map((l) => [l.tenant, l.weight]),
      [['acme', 2]],
    );
  });
});
