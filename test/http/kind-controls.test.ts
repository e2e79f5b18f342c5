/**
 * The overview's controls over kinds over real sockets: pause a kind prefix (a tenant in its own
 * scope, an operator anywhere or everywhere), set, change and clear a kind limit (operators
 * only), each with the session's CSRF token and the gRPC calls' permissions; a refused input
 * answers with its message in the control's panel, the values as typed, and nothing written.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { tenantScope } from '../../src/core/types.ts';
import { dashboardServer } from '../support/http.ts';
import { TOKENS } from '../support/refuses.ts';

const acme = tenantScope('acme');
const globex = tenantScope('globex');

describe('the overview controls over kinds', () => {
  const { server, signedIn } = dashboardServer();

  afterEach(async () => {
    for (const pause of await server.queue.pauses()) {
      await server.queue.resume({ kindPrefix: pause.kindPrefix, scope: pause.scope });
    }
    for (const limit of await server.queue.kindLimits()) await server.queue.clearKindLimit(limit.kindPrefix);
  });

  it('pauses a kind prefix everywhere, in a tenant or the system scope from an operator’s overview', async () => {
    const browser = await signedIn(TOKENS.operator);
    const page = await browser.get('/');
    assert.match(page.text, /action="\/pauses\/pause"/);
    assert.match(page.text, /<option value="tenant:acme"/, 'the tenants the server knows are offered');
    const csrf = await browser.csrf();
    for (const scope of ['everywhere', 'tenant:acme', 'system']) {
      const reply = await browser.post('/pauses/pause', { _csrf: csrf, kind_prefix: 'system:report', scope });
      assert.equal(reply.status, scope === 'tenant:acme' ? 400 : 303, reply.text.slice(0, 200));
    }
    const reply = await browser.post('/pauses/pause', { _csrf: csrf, kind_prefix: 'email.', scope: 'tenant:acme' });
    assert.equal(reply.status, 303);
    assert.equal(reply.headers.get('location'), '/#pauses');
    const pauses = (await server.queue.pauses()).map((p) => `${JSON.stringify(p.scope)} ${p.kindPrefix} ${p.by}`);
    assert.deepEqual(pauses.sort(), [
      '"everywhere" system:report ops',
      '{"type":"system"} system:report ops',
      '{"type":"tenant","tenant":"acme"} email. ops',
    ]);
    const shown = await browser.get('/');
    assert.match(shown.text, /email\.<\/td>\s*<td>tenant acme<\/td>/);
  });

  it('pauses in a tenant’s own scope only, and refuses another tenant’s, everywhere, a missing token and another site', async () => {
    const browser = await signedIn(TOKENS.acme);
    const page = await browser.get('/');
    assert.ok(page.text.includes('id="pause-form"') && !page.text.includes('<select name="scope">'));
    assert.equal((await browser.post('/pauses/pause', { kind_prefix: 'email.' })).status, 403, 'no CSRF token');
    const csrf = await browser.csrf();
    const other = await browser.post('/pauses/pause', { _csrf: csrf, kind_prefix: 'email.', scope: 'tenant:globex' });
    assert.equal(other.status, 403);
    const everywhere = await browser.post('/pauses/pause', { _csrf: csrf, kind_prefix: 'email.', scope: 'everywhere' });
    assert.equal(everywhere.status, 403);
    const crossSite = await browser.post(
      '/pauses/pause',
      { _csrf: csrf, kind_prefix: 'email.' },
      { origin: 'https://elsewhere.example' },
    );
    assert.equal(crossSite.status, 403);
    assert.deepEqual(await server.queue.pauses(), [], 'nothing paused by a refused request');
    assert.equal((await browser.post('/pauses/pause', { _csrf: csrf, kind_prefix: 'email.' })).status, 303);
    assert.deepEqual(
      (await server.queue.pauses()).map((p) => [p.scope, p.kindPrefix, p.by]),
      [[acme, 'email.', 'tenant:acme']],
    );
  });

  it('shows a refused pause in the Paused panel with what was typed, pausing nothing', async () => {
    await server.queue.pause({ kindPrefix: 'sms', scope: globex });
    const browser = await signedIn(TOKENS.operator);
    const reply = await browser.post('/pauses/pause', {
      _csrf: await browser.csrf(),
      kind_prefix: 'two words',
      scope: 'tenant:acme',
    });
    assert.equal(reply.status, 400);
    assert.match(reply.text, /id="pauses"[\s\S]*role="alert">kind_prefix: [^<]+<\/div>/);
    assert.match(reply.text, /name="kind_prefix" value="two words"/);
    assert.match(reply.text, /<option value="tenant:acme"\s+selected>/);
    assert.deepEqual(
      (await server.queue.pauses()).map((p) => p.kindPrefix),
      ['sms'],
    );
    const notPaused = await browser.post('/pauses/resume', {
      _csrf: await browser.csrf(),
      kind_prefix: 'never',
      scope: 'everywhere',
    });
    assert.equal(notPaused.status, 404);
    assert.match(notPaused.text, /role="alert">pause of never not found</);
  });

  it('sets, changes and clears a kind limit from an operator’s overview', async () => {
    const browser = await signedIn(TOKENS.operator);
    const csrf = await browser.csrf();
    const set = await browser.post('/limits/set', { _csrf: csrf, kind_prefix: 'email.', concurrency: '5', rate: '' });
    assert.equal(set.status, 303);
    assert.equal(set.headers.get('location'), '/#limits');
    let [limit] = await server.queue.kindLimits();
    assert.deepEqual([limit?.kindPrefix, limit?.concurrency, limit?.rate, limit?.by], ['email.', 5, null, 'ops']);
    const page = await browser.get('/');
    assert.match(page.text, /<tr data-prefix="email\.">/);
    assert.match(page.text, /form="limit-0"\s+name="concurrency"\s+inputmode="numeric"\s+value="5"/);
    const changed = await browser.post('/limits/set', {
      _csrf: csrf,
      kind_prefix: 'email.',
      concurrency: '',
      rate: '10/1m',
    });
    assert.equal(changed.status, 303);
    [limit] = await server.queue.kindLimits();
    assert.deepEqual([limit?.concurrency, limit?.rate], [null, { count: 10, periodMs: 60_000 }]);
    assert.equal((await browser.post('/limits/clear', { _csrf: csrf, kind_prefix: 'email.' })).status, 303);
    assert.deepEqual(await server.queue.kindLimits(), []);
  });

  it('answers a bad limit with the field’s name in the Limits panel and writes nothing', async () => {
    await server.queue.setKindLimit({ kindPrefix: 'email.', concurrency: 5 });
    const browser = await signedIn(TOKENS.operator);
    const csrf = await browser.csrf();
    const cases: [Record<string, string>, RegExp][] = [
      [{ kind_prefix: 'email.', concurrency: 'many', rate: '' }, /concurrency: &quot;many&quot; is not a whole number/],
      [{ kind_prefix: 'email.', concurrency: '0', rate: '' }, /concurrency: /],
      [{ kind_prefix: 'email.', concurrency: '', rate: 'lots/s' }, /rate: &quot;lots\/s&quot; is not a rate/],
      [{ kind_prefix: 'email.', concurrency: '', rate: '' }, /concurrency: set a concurrency or a rate/],
      [{ kind_prefix: '', concurrency: '3', rate: '' }, /kind_prefix: /],
    ];
    for (const [form, message] of cases) {
      const reply = await browser.post('/limits/set', { _csrf: csrf, ...form });
      assert.equal(reply.status, 400, JSON.stringify(form));
      assert.match(reply.text, /id="limits"[\s\S]*role="alert">/);
      assert.match(reply.text, message);
    }
    const kept = await browser.post('/limits/set', { _csrf: csrf, kind_prefix: 'email.', concurrency: 'x9', rate: '' });
    assert.match(kept.text, /form="limit-0"\s+name="concurrency"\s+inputmode="numeric"\s+value="x9"/, 'as typed');
    const limits = await server.queue.kindLimits();
    assert.deepEqual(
      limits.map((l) => [l.kindPrefix, l.concurrency, l.rate]),
      [['email.', 5, null]],
      'nothing written',
    );
    const missing = await browser.post('/limits/clear', { _csrf: csrf, kind_prefix: 'sms.' });
    assert.equal(missing.status, 404);
  });

  it('keeps kind limits to operators: a tenant neither sees nor sets them', async () => {
    const browser = await signedIn(TOKENS.acme);
    assert.ok(!(await browser.get('/')).text.includes('action="/limits/set"'));
    const csrf = await browser.csrf();
    assert.equal((await browser.post('/limits/set', { _csrf: csrf, kind_prefix: 'x', concurrency: '1' })).status, 403);
    await server.queue.setKindLimit({ kindPrefix: 'x', concurrency: 2 });
    assert.equal((await browser.post('/limits/clear', { _csrf: csrf, kind_prefix: 'x' })).status, 403);
    const operator = await signedIn(TOKENS.operator);
    assert.equal((await operator.post('/limits/set', { kind_prefix: 'x', concurrency: '1' })).status, 403, 'CSRF');
    assert.deepEqual(
      (await server.queue.kindLimits()).map((l) => [l.kindPrefix, l.concurrency]),
      [['x', 2]],
    );
  });
});
