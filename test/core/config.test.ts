import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { configFromEnv, DEFAULT_CONFIG, makeConfig, resolveConfig } from '../../src/core/config.ts';
import { TelhaError } from '../../src/core/errors.ts';
import { loadConfig } from '../../src/open.ts';
import { tempDir } from '../support/backends.ts';
import { refuses } from '../support/refuses.ts';

describe('configuration', () => {
  it("defaults to the spec's values", () => {
    assert.deepEqual(DEFAULT_CONFIG.jobs, {
      max_attempts: 5,
      reaper_interval_secs: 30,
      backoff_base_secs: 10,
      backoff_factor: 4,
      backoff_cap_secs: 3_600,
      lease_ttl_secs: 30,
      max_payload_bytes: 1_048_576,
      fair_tenants: true,
      max_result_bytes: 65_536,
      kinds: {},
      tenants: {},
    });
    assert.equal(DEFAULT_CONFIG.storage.path, './telha-data');
    assert.equal(DEFAULT_CONFIG.storage.durability, 'process');
    assert.equal(DEFAULT_CONFIG.retention.enabled, true);
  });

  it('refuses lease_ttl_secs = 0, naming the key', () => {
    refuses(
      () => makeConfig({ jobs: { lease_ttl_secs: 0 } }),
      'jobs.lease_ttl_secs',
      /^jobs\.lease_ttl_secs: must be greater than 0/,
    );
  });

  it('takes [jobs.tenants."<name>"] limits, and refuses bad ones naming the key', () => {
    const config = makeConfig({ jobs: { tenants: { acme: { concurrency: 5, rate: '10/s', weight: 4 } } } });
    assert.deepEqual(config.jobs.tenants, { acme: { concurrency: 5, rate: '10/s', weight: 4 } });
    refuses(
      () => makeConfig({ jobs: { tenants: { acme: { weight: 1_001 } } } }),
      'jobs.tenants.acme.weight',
      /^jobs\.tenants\.acme\.weight: must be at most 1000/,
    );
    refuses(
      () => makeConfig({ jobs: { tenants: { acme: { rate: 'often' } } } }),
      'jobs.tenants.acme.rate',
      /^jobs\.tenants\.acme\.rate: /,
    );
    refuses(() => makeConfig({ jobs: { tenants: { acme: {} } } }), 'jobs.tenants.acme', /set a concurrency/);
    refuses(() => makeConfig({ jobs: { tenants: { 'a b': { weight: 2 } } } }), 'jobs.tenants."a b"', /a tenant must/);
  });

  it('refuses max_attempts = 0, naming the key', () => {
    refuses(
      () => makeConfig({ jobs: { max_attempts: 0 } }),
      'jobs.max_attempts',
      /^jobs\.max_attempts: must be greater than 0/,
    );
  });

  it('refuses jobs.lease_ttl_secs = 1e10, naming the key and its bound', () => {
    // 1e10 s ahead of now is past 2^53 µs: the leased record would not decode again.
    refuses(
      () => makeConfig({ jobs: { lease_ttl_secs: 1e10 } }),
      'jobs.lease_ttl_secs',
      /^jobs\.lease_ttl_secs: must be at most 315360000 \(ten years/,
    );
  });

  /** Every numeric key with its documented range; the README's table lists the same. */
  const NUMERIC_KEYS: readonly [section: string, key: string, min: number, max: number][] = [
    ['storage', 'poll_interval_ms', 1, 2_147_483_647],
    ['jobs', 'max_attempts', 1, 1_000_000],
    ['jobs', 'reaper_interval_secs', 1, 2_147_483],
    ['jobs', 'backoff_base_secs', 0, 315_360_000],
    ['jobs', 'backoff_factor', 1, 1_000],
    ['jobs', 'backoff_cap_secs', 0, 315_360_000],
    ['jobs', 'lease_ttl_secs', 1, 315_360_000],
    ['jobs', 'max_payload_bytes', 1, 16_777_216],
    ['jobs', 'max_result_bytes', 1, 16_777_216],
    ['retention', 'completed_secs', 0, 315_360_000],
    ['retention', 'dead_secs', 0, 315_360_000],
    ['retention', 'cancelled_secs', 0, 315_360_000],
    ['retention', 'prune_interval_secs', 1, 2_147_483],
    ['schedules', 'interval_ms', 10, 2_147_483_647],
    ['server', 'max_lease_wait_ms', 1, 2_147_483_647],
    ['server', 'shutdown_grace_ms', 0, 2_147_483_647],
    ['server', 'max_concurrent_calls', 1, 1_000_000],
    ['server', 'max_parked_calls', 1, 1_000_000],
    ['server', 'http_max_sessions', 1, 1_000_000],
    ['server', 'http_sessions_per_token', 1, 10_000],
    ['server', 'http_failed_logins_burst', 1, 10_000],
    ['server', 'http_failed_logins_per_minute', 1, 60_000],
    ['metrics', 'max_kinds', 1, 10_000],
    ['metrics', 'refresh_ms', 1, 2_147_483_647],
    ['watch', 'retain_secs', 1, 315_360_000],
    ['watch', 'retain_events', 1_000, 1_000_000_000],
    ['watch', 'max_streams_per_principal', 1, 1_000_000],
  ];

  for (const [section, key, min, max] of NUMERIC_KEYS) {
    it(`accepts ${section}.${key} from ${min} to ${max} and refuses one past either end, naming the key`, () => {
      assert.equal((makeConfig({ [section]: { [key]: min } }) as never)[section][key], min);
      assert.equal((makeConfig({ [section]: { [key]: max } }) as never)[section][key], max);
      refuses(() => makeConfig({ [section]: { [key]: max + 1 } }), `${section}.${key}`, /must be at most/);
      refuses(() => makeConfig({ [section]: { [key]: min - 1 } }), `${section}.${key}`, /must be/);
    });
  }

  it('knows every numeric key: a new one gets a bound and a row above', () => {
    const numeric = Object.entries(DEFAULT_CONFIG).flatMap(([section, values]) =>
      Object.entries(values as object)
        .filter(([, value]) => typeof value === 'number')
        .map(([key]) => `${section}.${key}`),
    );
    assert.deepEqual(numeric.sort(), NUMERIC_KEYS.map(([section, key]) => `${section}.${key}`).sort());
  });

  it('refuses a fraction, naming the key: every numeric setting is a whole number', () => {
    refuses(() => makeConfig({ jobs: { lease_ttl_secs: 1.5 } }), 'jobs.lease_ttl_secs', /must be a whole number/);
    refuses(() => makeConfig({ server: { max_lease_wait_ms: 0.5 } }), 'server.max_lease_wait_ms', /whole number/);
  });

  it('refuses an unknown key, naming it', () => {
    refuses(() => makeConfig({ jobs: { max_atempts: 3 } }), 'jobs.max_atempts', /^jobs\.max_atempts: unknown key/);
    refuses(() => makeConfig({ queue: {} }), 'queue', /^queue: unknown key/);
  });

  it('refuses a wrong type, naming the key', () => {
    refuses(
      () => makeConfig({ jobs: { reaper_interval_secs: '30' } }),
      'jobs.reaper_interval_secs',
      /jobs\.reaper_interval_secs/,
    );
    refuses(() => makeConfig({ storage: { durability: 'sometimes' } }), 'storage.durability', /storage\.durability/);
  });

  it('reads TELHA_SECTION__KEY variables, later layers winning, and leaves other TELHA_ variables alone', () => {
    const env = {
      TELHA_JOBS__LEASE_TTL_SECS: '60',
      TELHA_STORAGE__DURABILITY: 'fsync',
      TELHA_TOKEN: 'secret',
      HOME: '/root',
    };
    assert.deepEqual(configFromEnv(env), { jobs: { lease_ttl_secs: 60 }, storage: { durability: 'fsync' } });
    const config = resolveConfig([
      { source: 'file', values: { jobs: { lease_ttl_secs: 10, max_attempts: 9 } } },
      { source: 'environment', values: configFromEnv(env) },
    ]);
    assert.equal(config.jobs.lease_ttl_secs, 60);
    assert.equal(config.jobs.max_attempts, 9);
    assert.equal(config.storage.durability, 'fsync');
  });

  it('refuses a tenant token without a tenant, naming the entry', () => {
    refuses(
      () => makeConfig({ server: { tokens: [{ token: 'x'.repeat(16), role: 'tenant' }] } }),
      'server.tokens[0].tenant',
      /^server\.tokens\[0\]\.tenant: a tenant token must name its tenant/,
    );
  });

  it('says which layer a refused value came from', () => {
    refuses(
      () => resolveConfig([{ source: 'environment', values: configFromEnv({ TELHA_JOBS__LEASE_TTL_SECS: '0' }) }]),
      'jobs.lease_ttl_secs',
      /\(from environment\)/,
    );
  });

  it('loads a TOML file, then the environment', async () => {
    const dir = tempDir();
    const file = join(dir, 'telha.toml');
    writeFileSync(file, '[jobs]\nmax_attempts = 3\nlease_ttl_secs = 90\n\n[storage]\npath = "/var/lib/telha"\n');
    const config = await loadConfig({ file, env: { TELHA_JOBS__MAX_ATTEMPTS: '7' } });
    assert.equal(config.jobs.max_attempts, 7);
    assert.equal(config.jobs.lease_ttl_secs, 90);
    assert.equal(config.storage.path, '/var/lib/telha');
  });

  it('refuses a file with an unknown key, naming the key and the file', async () => {
    const dir = tempDir();
    const file = join(dir, 'telha.toml');
    writeFileSync(file, '[jobs]\nlease_tll_secs = 3\n');
    await assert.rejects(loadConfig({ file, env: {} }), (error: unknown) => {
      assert.ok(error instanceof TelhaError);
      assert.equal(error.field, 'jobs.lease_tll_secs');
      assert.ok(error.message.includes(file));
      return true;
    });
  });
});
