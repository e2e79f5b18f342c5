/**
 * Dashboard logins under a tenant's pressure: one token's sessions can only
 * push out that token's own, the store of sessions refuses new ones when full
 * rather than log anyone out, and failed logins from one client address are
 * throttled while every other address logs in as before. Each refusal is
 * counted by reason on /metrics.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { Sessions, SESSION_IDLE_MS } from '../../src/http/sessions.ts';
import { LoginThrottle } from '../../src/http/throttle.ts';
import { Browser, parseMetrics } from '../support/http.ts';
import { TOKEN_ROLES, TOKENS } from '../support/refuses.ts';
import { liveServer, type TestServer } from '../support/server.ts';

const SECOND = 1_000_000;

/** A login form posted from `localAddress` (a loopback address of this machine) over a fresh connection. */
function loginFrom(
  base: string,
  token: string,
  localAddress: string,
): Promise<{ status: number; retryAfter: string | null }> {
  const url = new URL('/login', base);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        localAddress,
        agent: false,
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          const retryAfter = res.headers['retry-after'];
          resolve({ status: res.statusCode ?? 0, retryAfter: typeof retryAfter === 'string' ? retryAfter : null });
        });
      },
    );
    req.on('error', reject);
    req.end(new URLSearchParams({ token }).toString());
  });
}

async function refusedLogins(server: TestServer): Promise<Record<string, number>> {
  const reply = await fetch(`${server.http}/metrics`, { headers: { authorization: `Bearer ${TOKENS.operator}` } });
  const metrics = parseMetrics(await reply.text());
  const reasons = ['bad_token', 'not_allowed', 'throttled', 'sessions_full'];
  return Object.fromEntries(
    reasons.map((reason) => [reason, metrics.value('telha_dashboard_logins_refused_total', { reason })]),
  );
}

describe('dashboard logins', () => {
  describe('with the default limits', () => {
    const { server } = liveServer({ server: { tokens: [...TOKEN_ROLES] } });

    it("keeps the operator's session while a tenant logs in 10,050 times, which push out only its own", async () => {
      const operator = new Browser(server.http);
      assert.equal((await operator.login(TOKENS.operator)).status, 303);
      const first = new Browser(server.http);
      assert.equal((await first.login(TOKENS.acme)).status, 303);
      let latest = first;
      for (let done = 1; done < 10_050; done += 50) {
        const browsers = Array.from({ length: 50 }, () => new Browser(server.http));
        const replies = await Promise.all(browsers.map((browser) => browser.login(TOKENS.acme)));
        assert.ok(
          replies.every((reply) => reply.status === 303),
          'every login of the tenant succeeds',
        );
        latest = browsers.at(-1) ?? latest;
      }
      assert.equal((await operator.get('/')).status, 200, "the operator's session is still there");
      assert.equal((await latest.get('/')).status, 200, "the tenant's latest session too");
      assert.equal((await first.get('/')).status, 303, "the tenant's oldest made room for its newest");
    });

    it('throttles failed logins from one address: past ten, 429 with Retry-After, while another address logs in', async () => {
      for (let i = 0; i < 10; i++) {
        assert.equal((await loginFrom(server.http, 'wrong-token-0123456789', '127.0.0.1')).status, 401);
      }
      const throttled = await loginFrom(server.http, 'wrong-token-0123456789', '127.0.0.1');
      assert.equal(throttled.status, 429);
      assert.equal(throttled.retryAfter, '10', 'one more try every 10 s (6 a minute)');
      assert.equal(
        (await loginFrom(server.http, TOKENS.operator, '127.0.0.1')).status,
        429,
        'a right token too: throttled means not even tried',
      );
      assert.equal((await loginFrom(server.http, TOKENS.operator, '127.0.0.2')).status, 303, 'another address');
      assert.equal((await loginFrom(server.http, 'wrong-token-0123456789', '127.0.0.2')).status, 401);
      server.clock.advance(10 * SECOND);
      assert.equal((await loginFrom(server.http, 'wrong-token-0123456789', '127.0.0.1')).status, 401, 'refilled');
      assert.equal((await loginFrom(server.http, 'wrong-token-0123456789', '127.0.0.1')).status, 429);
      // Counted by reason; the test before this one refused no login.
      assert.deepEqual(await refusedLogins(server), {
        bad_token: 12,
        not_allowed: 0,
        throttled: 3,
        sessions_full: 0,
      });
    });
  });

  describe('with small limits', () => {
    const { server } = liveServer({
      server: { tokens: [...TOKEN_ROLES], http_sessions_per_token: 2, http_max_sessions: 3 },
    });

    it("refuses a new session when every one is taken, rather than end another token's", async () => {
      const acme = [new Browser(server.http), new Browser(server.http), new Browser(server.http)];
      for (const browser of acme) assert.equal((await browser.login(TOKENS.acme)).status, 303);
      assert.equal((await acme[0]?.get('/'))?.status, 303, "acme's third session ended its first");
      const operator = new Browser(server.http);
      assert.equal((await operator.login(TOKENS.operator)).status, 303);
      const globex = await new Browser(server.http).login(TOKENS.globex);
      assert.equal(globex.status, 503, 'three sessions, every one taken');
      assert.ok(globex.text.includes('Too many dashboard sessions'));
      for (const browser of [acme[1], acme[2], operator]) assert.equal((await browser?.get('/'))?.status, 200);
      const refused = await refusedLogins(server);
      assert.equal(refused['sessions_full'], 1);
      assert.equal((await new Browser(server.http).login(TOKENS.worker)).status, 403);
      assert.equal((await refusedLogins(server))['not_allowed'], 1);
    });
  });

  it('lets an expired session hold no place: a full store takes a new login once one expires', () => {
    let now = 0;
    const sessions = new Sessions({ total: 1, perPrincipal: 1 }, () => now);
    const operator = { role: 'operator', tenant: null, name: 'ops' } as const;
    const tenant = { role: 'tenant', tenant: 'acme', name: 'acme' } as const;
    assert.ok(sessions.create(operator));
    assert.equal(sessions.create(tenant), null, 'full');
    now += SESSION_IDLE_MS;
    assert.ok(sessions.create(tenant), "the operator's expired session made room");
    assert.equal(sessions.size, 1);
  });

  it('keeps at most its bound of addresses, forgetting the one that failed longest ago', () => {
    let now = 0;
    const throttle = new LoginThrottle({ burst: 1, perMinute: 1, maxAddresses: 2 }, () => now);
    throttle.failed('10.0.0.1');
    throttle.failed('10.0.0.2');
    assert.notEqual(throttle.retryAfterSecs('10.0.0.1'), null);
    now = 1;
    throttle.failed('10.0.0.3');
    assert.equal(throttle.size, 2);
    assert.equal(throttle.retryAfterSecs('10.0.0.1'), null, 'forgotten');
    assert.notEqual(throttle.retryAfterSecs('10.0.0.2'), null);
    assert.notEqual(throttle.retryAfterSecs('10.0.0.3'), null);
  });

  it('counts an IPv6 client by its /64, and an IPv4-mapped one by its IPv4 address', () => {
    const throttle = new LoginThrottle({ burst: 1, perMinute: 1, maxAddresses: 10 }, () => 0);
    throttle.failed('2001:db8:1:2::1');
    assert.notEqual(throttle.retryAfterSecs('2001:db8:1:2:ffff::9'), null, 'same /64');
    assert.equal(throttle.retryAfterSecs('2001:db8:1:3::1'), null, 'another /64');
    throttle.failed('::ffff:192.0.2.7');
    assert.notEqual(throttle.retryAfterSecs('192.0.2.7'), null);
  });
});
