import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { backoffMicros } from '../../src/core/backoff.ts';
import { configFromEnv, makeConfig, resolveConfig } from '../../src/core/config.ts';
import { TelhaError } from '../../src/core/errors.ts';
import { kindPolicy } from '../../src/core/kind-policy.ts';
import { MAX_KIND_LIMITS, MAX_KIND_POLICIES } from '../../src/core/bounds.ts';
import { formatRate, parseRate } from '../../src/core/rate.ts';
import { loadConfig } from '../../src/open.ts';
import { tempDir } from '../support/backends.ts';
import { refuses } from '../support/refuses.ts';

describe('parseRate', () => {
  it('reads a count per period, a bare unit meaning one of it', () => {
    assert.deepEqual(parseRate('100/s'), { count: 100, periodMs: 1_000 });
    assert.deepEqual(parseRate('10/1m'), { count: 10, periodMs: 60_000 });
    assert.deepEqual(parseRate('5/30s'), { count: 5, periodMs: 30_000 });
    assert.deepEqual(parseRate('1/250ms'), { count: 1, periodMs: 250 });
    assert.deepEqual(parseRate('1000/h'), { count: 1_000, periodMs: 3_600_000 });
    assert.deepEqual(parseRate('7/1d'), { count: 7, periodMs: 86_400_000 });
  });

  it('refuses what is not a rate, naming the field', () => {
    for (const text of ['many/s', '100', '100/', '/s', '-1/s', '1.5/s', '10/1w', '10 per s', '']) {
      refuses(() => parseRate(text, 'rate'), 'rate', /is not a rate/);
    }
    refuses(() => parseRate(100, 'rate'), 'rate', /must be a string/);
  });

  it('refuses a zero count or a zero period, and a period no timer can wait', () => {
    refuses(() => parseRate('0/s'), 'rate', /count must be at least 1/);
    refuses(() => parseRate('5/0s'), 'rate', /period must be longer than zero/);
    refuses(() => parseRate('5/30d'), 'rate', /period must be at most/);
    refuses(() => parseRate('2000000000/s'), 'rate', /count must be at most/);
  });

  it('prints a rate back in its largest whole unit', () => {
    assert.equal(formatRate(parseRate('10/60s')), '10/1m');
    assert.equal(formatRate(parseRate('3/1500ms')), '3/1500ms');
  });
});

describe('[jobs.kinds."<prefix>"] configuration', () => {
  it('accepts every key of a kind table', () => {
    const config = makeConfig({
      jobs: {
        kinds: {
          email: {
            backoff_base_secs: 30,
            backoff_factor: 2,
            backoff_cap_secs: 600,
            max_attempts: 10,
            timeout_secs: 600,
            concurrency: 5,
            rate: '100/s',
          },
        },
      },
    });
    assert.equal(config.jobs.kinds['email']?.rate, '100/s');
  });

  it('refuses a bad value inside a kind table, naming the prefix and the key', () => {
    refuses(
      () => makeConfig({ jobs: { kinds: { email: { max_attempts: 0 } } } }),
      'jobs.kinds.email.max_attempts',
      /^jobs\.kinds\.email\.max_attempts: must be at least 1/,
    );
    refuses(
      () => makeConfig({ jobs: { kinds: { 'email:bulk': { concurrency: 0 } } } }),
      'jobs.kinds."email:bulk".concurrency',
      /must be at least 1/,
    );
    refuses(
      () => makeConfig({ jobs: { kinds: { email: { concurrency: 1_000_001 } } } }),
      'jobs.kinds.email.concurrency',
      /must be at most 1000000/,
    );
    refuses(
      () => makeConfig({ jobs: { kinds: { email: { timeout_secs: 0 } } } }),
      'jobs.kinds.email.timeout_secs',
      /must be at least 1/,
    );
    refuses(
      () => makeConfig({ jobs: { kinds: { email: { rate: 'many/s' } } } }),
      'jobs.kinds.email.rate',
      /^jobs\.kinds\.email\.rate: "many\/s" is not a rate/,
    );
    refuses(
      () => makeConfig({ jobs: { kinds: { email: { rate: '0/s' } } } }),
      'jobs.kinds.email.rate',
      /count must be at least 1/,
    );
    refuses(
      () => makeConfig({ jobs: { kinds: { email: { max_atempts: 3 } } } }),
      'jobs.kinds.email.max_atempts',
      /unknown key/,
    );
  });

  it('refuses a prefix with whitespace or past 255 bytes, and more prefixes than the bound', () => {
    refuses(() => makeConfig({ jobs: { kinds: { 'e mail': {} } } }), 'jobs.kinds."e mail"', /kind prefix must be/);
    refuses(() => makeConfig({ jobs: { kinds: { ['x'.repeat(256)]: {} } } }), `jobs.kinds.${'x'.repeat(256)}`, /1-255/);
    const many = Object.fromEntries(Array.from({ length: MAX_KIND_POLICIES + 1 }, (_, i) => [`k${i}`, {}]));
    refuses(() => makeConfig({ jobs: { kinds: many } }), 'jobs.kinds', /at most 1000 kind prefixes/);
  });

  it('refuses more prefixes setting a concurrency or a rate than the store holds kind limits', () => {
    const limited = Object.fromEntries(
      Array.from({ length: MAX_KIND_LIMITS + 1 }, (_, i) => [
        `k${i}`,
        i % 2 === 0 ? { concurrency: 1 } : { rate: '1/s' },
      ]),
    );
    refuses(() => makeConfig({ jobs: { kinds: limited } }), 'jobs.kinds', /at most 100 kind prefixes may set/);
    const enough = Object.fromEntries(Array.from({ length: MAX_KIND_LIMITS }, (_, i) => [`k${i}`, { concurrency: 1 }]));
    assert.equal(
      Object.keys(makeConfig({ jobs: { kinds: { ...enough, other: { max_attempts: 2 } } } }).jobs.kinds).length,
      101,
    );
  });

  it('takes the longest matching prefix, as a whole, over the jobs.* defaults', () => {
    const config = makeConfig({
      jobs: {
        max_attempts: 5,
        kinds: {
          email: { max_attempts: 10, timeout_secs: 600, concurrency: 5 },
          'email:bulk': { rate: '10/1m' },
        },
      },
    }).jobs;
    assert.deepEqual(kindPolicy(config, 'email:welcome'), {
      prefix: 'email',
      backoffBaseSecs: 10,
      backoffFactor: 4,
      backoffCapSecs: 3_600,
      maxAttempts: 10,
      timeoutSecs: 600,
      concurrency: 5,
      rate: null,
    });
    const bulk = kindPolicy(config, 'email:bulk:weekly');
    assert.equal(bulk.prefix, 'email:bulk');
    assert.deepEqual(bulk.rate, { count: 10, periodMs: 60_000 });
    // The longest table wins whole: what it leaves out comes from jobs.*, not from "email".
    assert.equal(bulk.maxAttempts, 5);
    assert.equal(bulk.concurrency, null);
    assert.equal(kindPolicy(config, 'sms').prefix, null);
    assert.equal(kindPolicy(config, 'emai').prefix, null);
  });

  it('matches a system: kind only by a prefix that starts with system:', () => {
    const config = makeConfig({ jobs: { kinds: { s: { max_attempts: 1 }, 'system:': { max_attempts: 2 } } } }).jobs;
    assert.equal(kindPolicy(config, 'system:prune').maxAttempts, 2);
    assert.equal(kindPolicy(config, 'sms').maxAttempts, 1);
    const tenantOnly = makeConfig({ jobs: { kinds: { sys: { max_attempts: 1 } } } }).jobs;
    assert.equal(kindPolicy(tenantOnly, 'system:prune').prefix, null);
  });

  it("paces a kind by its table's backoff, its base a floor for the global cap", () => {
    const config = makeConfig({
      jobs: {
        backoff_cap_secs: 60,
        kinds: {
          slow: { backoff_base_secs: 7_200 },
          quick: { backoff_base_secs: 1, backoff_factor: 2, backoff_cap_secs: 5 },
        },
      },
    }).jobs;
    const secs = (kind: string, attempts: number): number => backoffMicros(config, kind, attempts) / 1e6;
    assert.deepEqual(
      [1, 2, 3].map((a) => secs('slow', a)),
      [7_200, 7_200, 7_200],
    );
    assert.deepEqual(
      [1, 2, 3, 4].map((a) => secs('quick:x', a)),
      [1, 2, 4, 5],
    );
    assert.deepEqual(
      [1, 2, 3].map((a) => secs('other', a)),
      [10, 40, 60],
    );
  });

  it('reads kind tables from TOML, quoted prefixes and all', async () => {
    const file = join(tempDir(), 'telha.toml');
    writeFileSync(
      file,
      '[jobs.kinds."email"]\nbackoff_base_secs = 30\nmax_attempts = 10\ntimeout_secs = 600\nconcurrency = 5\nrate = "100/s"\n\n' +
        '[jobs.kinds."email:bulk"]\nrate = "10/1m"\n',
    );
    const config = await loadConfig({ file, env: {} });
    assert.deepEqual(config.jobs.kinds, {
      email: { backoff_base_secs: 30, max_attempts: 10, timeout_secs: 600, concurrency: 5, rate: '100/s' },
      'email:bulk': { rate: '10/1m' },
    });
  });

  it('names the file a bad kind table came from', async () => {
    const file = join(tempDir(), 'telha.toml');
    writeFileSync(file, '[jobs.kinds."email"]\nrate = "many/s"\n');
    await assert.rejects(loadConfig({ file, env: {} }), (error: unknown) => {
      assert.ok(error instanceof TelhaError);
      assert.equal(error.field, 'jobs.kinds.email.rate');
      assert.ok(error.message.includes(file), error.message);
      return true;
    });
  });

  it('takes the whole kinds table from TELHA_JOBS__KINDS as JSON, replacing the file', () => {
    const env = { TELHA_JOBS__KINDS: '{"email":{"max_attempts":3,"rate":"5/s"}}' };
    const config = resolveConfig([
      { source: 'file', values: { jobs: { kinds: { sms: { max_attempts: 9 } } } } },
      { source: 'environment', values: configFromEnv(env) },
    ]);
    assert.deepEqual(config.jobs.kinds, { email: { max_attempts: 3, rate: '5/s' } });
    refuses(
      () =>
        resolveConfig([
          { source: 'environment', values: configFromEnv({ TELHA_JOBS__KINDS: '{"email":{"rate":"x"}}' }) },
        ]),
      'jobs.kinds.email.rate',
      /\(from environment\)/,
    );
  });
});
