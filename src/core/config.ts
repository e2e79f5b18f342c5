/**
 * Configuration: defaults, then validation with the key named in every message.
 *
 * Sources, later ones winning: the defaults below, a TOML file, environment
 * variables `TELHA_<SECTION>__<KEY>` (e.g. `TELHA_JOBS__LEASE_TTL_SECS=60`).
 * Reading the file and the environment happens in `engine/`; this module only
 * merges and validates plain values.
 */
import { z } from 'zod';
import { DEFAULT_ADDRESS, DEFAULT_HTTP_ADDRESS } from './defaults.ts';
import { invalidArgument } from './errors.ts';
import {
  MAX_ATTEMPTS_LIMIT,
  MAX_DURATION_SECS,
  MAX_KIND_BYTES,
  MAX_KIND_LIMITS,
  MAX_KIND_POLICIES,
  MAX_PAYLOAD_BYTES_LIMIT,
  MAX_RESULT_BYTES_LIMIT,
  MAX_TENANT_BYTES,
  MAX_TENANT_LIMITS,
  MAX_TENANT_WEIGHT,
  MAX_TIMER_MS,
} from './bounds.ts';
import { parseRate } from './rate.ts';
import { utf8Length } from './validate.ts';

/** `jobs.max_attempts`: attempts before a job is dead-lettered, unless the job sets its own. */
export const DEFAULT_MAX_ATTEMPTS = 5;
/** `jobs.reaper_interval_secs`: how often expired leases are reclaimed. */
export const DEFAULT_REAPER_INTERVAL_SECS = 30;
/** `jobs.backoff_base_secs`: first retry delay. */
export const DEFAULT_BACKOFF_BASE_SECS = 10;
/** `jobs.backoff_factor`: each further retry waits this many times longer. */
export const DEFAULT_BACKOFF_FACTOR = 4;
/** `jobs.backoff_cap_secs`: no retry waits longer than this (1 h). */
export const DEFAULT_BACKOFF_CAP_SECS = 3_600;
/**
 * `jobs.lease_ttl_secs`: how long a lease lasts without a heartbeat. 30 s: long
 * enough that a worker heartbeating every 10 s survives two lost beats, short
 * enough that a dead worker's job runs again within a minute (TTL + one reaper interval).
 */
export const DEFAULT_LEASE_TTL_SECS = 30;
/** `jobs.max_payload_bytes`: largest accepted payload (1 MiB). */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;
/**
 * `jobs.max_result_bytes`: largest result a completion may store (64 KiB). A result is read by
 * people and producers, not streamed; a bigger output belongs in a blob store, named by the result.
 */
export const DEFAULT_MAX_RESULT_BYTES = 64 * 1024;
/** `retention.completed_secs`: Completed jobs are pruned this long after they finish (7 days). */
export const DEFAULT_RETENTION_COMPLETED_SECS = 7 * 24 * 3_600;
/** `retention.dead_secs`: Dead jobs are kept longer, for operators to inspect and retry (30 days). */
export const DEFAULT_RETENTION_DEAD_SECS = 30 * 24 * 3_600;
/** `retention.cancelled_secs`: Cancelled jobs are kept as long as Dead ones, for operators to inspect and retry (30 days). */
export const DEFAULT_RETENTION_CANCELLED_SECS = DEFAULT_RETENTION_DEAD_SECS;
/** `retention.prune_interval_secs`: how often the `system:prune` maintenance job is scheduled. */
export const DEFAULT_PRUNE_INTERVAL_SECS = 60;
/** `storage.path`: where the embedded store lives. */
export const DEFAULT_STORAGE_PATH = './telha-data';

/**
 * A numeric setting: a whole number from `min` to `max`. Every numeric key is whole (durations
 * below a second have `_ms` keys), and every one has an upper bound, given with its reason when
 * a value is refused: a value the loader accepts can never make a record unreadable or a timer
 * misfire.
 */
function wholeNumber(min: number, max: number, reason: string): z.ZodNumber {
  const tooBig = `must be at most ${max} (${reason})`;
  return (
    z
      .number()
      // zod refuses a whole number past 2^53 here too: that one is too big, not a fraction.
      .int({
        error: (issue) =>
          Number.isInteger(issue.input) ? tooBig : `must be a whole number (got ${String(issue.input)})`,
      })
      .min(min, { error: `must be at least ${min}` })
      .max(max, { error: tooBig })
  );
}

/** Seconds added to the clock and kept in records: deadlines, backoff gates, retention cut-offs. */
const duration = (min: number): z.ZodNumber =>
  wholeNumber(min, MAX_DURATION_SECS, 'ten years, so that a time this far ahead still fits in a record');
/** Milliseconds of a timer. */
const timerMs = (min: number): z.ZodNumber =>
  wholeNumber(min, MAX_TIMER_MS, 'about 24.8 days, the longest timer Node can set');
/** Seconds between passes of a background service, each pass set as one timer. */
const intervalSecs = wholeNumber(1, Math.floor(MAX_TIMER_MS / 1000), 'about 24.8 days, the longest timer Node can set');
/** A count of calls one server holds at once. */
const callCount = wholeNumber(1, 1_000_000, 'far more calls than one process can serve');

const storageSchema = z.strictObject({
  /** `rocksdb` (embedded, one server) or `postgres` (several servers, one database). */
  kind: z.enum(['rocksdb', 'postgres']).default('rocksdb'),
  path: z.string().min(1).default(DEFAULT_STORAGE_PATH),
  /** For `postgres`: the connection URL, e.g. `postgres://user@host:5432/db`. Never logged. */
  url: z.string().min(1).optional(),
  /** For `postgres`: the schema holding Telha's tables. */
  schema: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier')
    .default('telha'),
  /**
   * `process` (default): an acknowledged write is in the OS page cache and survives the process
   * being killed. `fsync`: the WAL is synced before acknowledging, so it also survives an OS crash
   * or power loss; concurrent writers share one sync. On `postgres`, `process` turns
   * `synchronous_commit` off for Telha's connections and `fsync` keeps it on (see the README).
   */
  durability: z.enum(['process', 'fsync']).default('process'),
  /**
   * For `rocksdb`: write big groups of transitions on a thread of their own while the main thread
   * goes on serving. `auto` (default) turns it on when the process may use more than two cores:
   * on two, the server, its worker clients and RocksDB's compactions already keep both busy, and
   * the hop costs more than it frees (bench/RESULTS.md measures it on and off).
   */
  write_thread: z.union([z.boolean(), z.literal('auto')]).default('auto'),
  /**
   * For `postgres`: servers wake each other's lease waiters with LISTEN/NOTIFY; a waiter also
   * looks again after this long, so a notification lost while the listener reconnects costs at
   * most this much latency.
   */
  poll_interval_ms: timerMs(1).default(1_000),
  /**
   * For `postgres`: run the hot statements as named prepared statements, parsed and planned once
   * per connection. `false` for a connection pooler that cannot keep them (PgBouncer in
   * transaction mode before 1.21).
   */
  prepared_statements: z.boolean().default(true),
});

const maxAttempts = wholeNumber(1, MAX_ATTEMPTS_LIMIT, 'the ceiling a job may set for itself');
// A factor of 1,000 takes a one-second base past the longest cap by the fourth retry.
const backoffFactor = wholeNumber(1, 1_000, 'it reaches the longest cap within four retries');

/** A rate as `"<count>/<period>"`: `"100/s"`, `"10/1m"`. */
const rateText = z.string().superRefine((text, ctx) => {
  try {
    parseRate(text);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message.replace(/^rate: /, '') });
  }
});

/**
 * One `[jobs.kinds."<prefix>"]` table: the policy of every kind starting with the prefix (the
 * longest matching prefix wins; see `kindPolicy`). A key left out takes the `jobs.*` value of
 * the same name, or none for `timeout_secs`, `concurrency` and `rate`.
 */
const kindSchema = z.strictObject({
  backoff_base_secs: duration(0).optional(),
  backoff_factor: backoffFactor.optional(),
  /** Defaults to the larger of this kind's `backoff_base_secs` and `jobs.backoff_cap_secs`. */
  backoff_cap_secs: duration(0).optional(),
  max_attempts: maxAttempts.optional(),
  /** The longest one attempt may run, heartbeats or not; then its lease is reaped (detail `timeout`). */
  timeout_secs: duration(1).optional(),
  /** At most this many jobs of the prefix leased at once. */
  concurrency: wholeNumber(1, 1_000_000, 'far more jobs than one store leases at once').optional(),
  /** At most this many leases per period, as `"<count>/<period>"`: `"100/s"`, `"10/1m"`. */
  rate: rateText.optional(),
});

/** Kind prefixes as `jobs.kinds` keys: 1-255 bytes, printable, no whitespace (like a lease filter's). */
const KIND_PREFIX_PATTERN = /^[^\s\p{Cc}\p{Cf}]+$/u;

const kindsSchema = z.record(z.string(), kindSchema).superRefine((kinds, ctx) => {
  const prefixes = Object.keys(kinds);
  if (prefixes.length > MAX_KIND_POLICIES) {
    ctx.addIssue({
      code: 'custom',
      message: `at most ${MAX_KIND_POLICIES} kind prefixes (got ${prefixes.length})`,
    });
  }
  const limited = Object.values(kinds).filter((k) => k.concurrency !== undefined || k.rate !== undefined).length;
  if (limited > MAX_KIND_LIMITS) {
    ctx.addIssue({
      code: 'custom',
      message: `at most ${MAX_KIND_LIMITS} kind prefixes may set a concurrency or a rate (got ${limited})`,
    });
  }
  for (const prefix of prefixes) {
    if (!KIND_PREFIX_PATTERN.test(prefix) || !prefix.isWellFormed() || utf8Length(prefix) > MAX_KIND_BYTES) {
      ctx.addIssue({
        code: 'custom',
        path: [prefix],
        message: `a kind prefix must be 1-${MAX_KIND_BYTES} bytes without whitespace or control characters`,
      });
    }
  }
});

export type KindConfig = z.infer<typeof kindSchema>;

/**
 * One `[jobs.tenants."<name>"]` table: the tenant's limit (`core/tenant-limits.ts`), stored at
 * start (`by: config`), replacing one set through the API. At least one key must be given.
 */
const tenantSchema = z
  .strictObject({
    /** At most this many of the tenant's jobs leased at once. */
    concurrency: wholeNumber(1, 1_000_000, 'far more jobs than one store leases at once').optional(),
    /** At most this many of the tenant's leases per period. */
    rate: rateText.optional(),
    /** Its share of the fleet's fair order: weight 4 is served four times as often as weight 1. */
    weight: wholeNumber(1, MAX_TENANT_WEIGHT, 'a thousand turns to one is more skew than any use needs').optional(),
  })
  .refine((t) => t.concurrency !== undefined || t.rate !== undefined || (t.weight ?? 1) !== 1, {
    message: 'set a concurrency, a rate or a weight other than 1',
  });

const tenantsSchema = z.record(z.string(), tenantSchema).superRefine((tenants, ctx) => {
  for (const tenant of Object.keys(tenants)) {
    if (!KIND_PREFIX_PATTERN.test(tenant) || !tenant.isWellFormed() || utf8Length(tenant) > MAX_TENANT_BYTES) {
      ctx.addIssue({
        code: 'custom',
        path: [tenant],
        message: `a tenant must be 1-${MAX_TENANT_BYTES} bytes without whitespace or control characters`,
      });
    }
  }
  if (Object.keys(tenants).length > MAX_TENANT_LIMITS) {
    ctx.addIssue({ code: 'custom', message: `at most ${MAX_TENANT_LIMITS} tenant limits` });
  }
});

export type TenantConfig = z.infer<typeof tenantSchema>;

const jobsSchema = z.strictObject({
  max_attempts: maxAttempts.default(DEFAULT_MAX_ATTEMPTS),
  reaper_interval_secs: intervalSecs.default(DEFAULT_REAPER_INTERVAL_SECS),
  backoff_base_secs: duration(0).default(DEFAULT_BACKOFF_BASE_SECS),
  backoff_factor: backoffFactor.default(DEFAULT_BACKOFF_FACTOR),
  backoff_cap_secs: duration(0).default(DEFAULT_BACKOFF_CAP_SECS),
  lease_ttl_secs: duration(1).default(DEFAULT_LEASE_TTL_SECS),
  max_payload_bytes: wholeNumber(
    1,
    MAX_PAYLOAD_BYTES_LIMIT,
    '16 MiB: a job travels with its payload and continuation in one gRPC message of at most 64 MiB',
  ).default(DEFAULT_MAX_PAYLOAD_BYTES),
  /**
   * The worker fleet's cross-tenant poll takes system jobs first, then one job per tenant in turn
   * (`core/fair-order.ts`); `false` takes ready jobs in key order, scope by scope, as the spec's
   * plain scan would (one busy tenant then delays every tenant sorting after it).
   */
  fair_tenants: z.boolean().default(true),
  max_result_bytes: wholeNumber(
    1,
    MAX_RESULT_BYTES_LIMIT,
    '16 MiB: a job travels with its payload, continuation and result in one gRPC message of at most 64 MiB',
  ).default(DEFAULT_MAX_RESULT_BYTES),
  /** Per kind prefix: `[jobs.kinds."email"] max_attempts = 10, timeout_secs = 600, rate = "100/s"`. */
  kinds: kindsSchema.default({}),
  /** Per tenant: `[jobs.tenants."acme"] concurrency = 10, rate = "50/s", weight = 4`. */
  tenants: tenantsSchema.default({}),
});

const retentionSchema = z.strictObject({
  enabled: z.boolean().default(true),
  completed_secs: duration(0).default(DEFAULT_RETENTION_COMPLETED_SECS),
  dead_secs: duration(0).default(DEFAULT_RETENTION_DEAD_SECS),
  cancelled_secs: duration(0).default(DEFAULT_RETENTION_CANCELLED_SECS),
  prune_interval_secs: intervalSecs.default(DEFAULT_PRUNE_INTERVAL_SECS),
});

/** `schedules.interval_ms`: how often the scheduler looks for due schedules (a due time fires at most this late). */
export const DEFAULT_SCHEDULES_INTERVAL_MS = 1_000;

const schedulesSchema = z.strictObject({
  /** Fire due schedules on this server. Off, schedules can still be managed; another server fires them. */
  enabled: z.boolean().default(true),
  /** At least 10 ms: each pass is a store round trip, and a due time is a whole second at best. */
  interval_ms: wholeNumber(10, MAX_TIMER_MS, 'about 24.8 days, the longest timer Node can set').default(
    DEFAULT_SCHEDULES_INTERVAL_MS,
  ),
});

/** `server.address`: loopback by default; binding elsewhere requires tokens. */
/** `server.max_lease_wait_ms`: the longest a lease call may wait for work (30 s). */
export const DEFAULT_MAX_LEASE_WAIT_MS = 30_000;
/** `server.shutdown_grace_ms`: how long in-flight calls get to finish on SIGTERM. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
/** `server.max_concurrent_calls`: unary calls in flight beyond this get RESOURCE_EXHAUSTED. */
export const DEFAULT_MAX_CONCURRENT_CALLS = 10_000;
/**
 * `server.max_parked_calls`: long-poll Lease calls (`wait_ms` > 0) and Work, Watch and Produce
 * streams held at once; beyond this they get RESOURCE_EXHAUSTED. A budget of its own, so a crowd
 * of idle workers can never use up the unary budget that producers and operators need (the SDK
 * sends its enqueues as unary calls when its Produce stream is refused).
 */
export const DEFAULT_MAX_PARKED_CALLS = 10_000;

/**
 * `server.http_max_sessions`: dashboard sessions at most, every token's together. Past it a login
 * is refused (503) rather than given another token's place: one tenant's 10,050 logins used to
 * push the operator's session out of a shared cache of 10,000.
 */
export const DEFAULT_HTTP_MAX_SESSIONS = 10_000;
/**
 * `server.http_sessions_per_token`: dashboard sessions one token holds at most; its next login
 * ends its own least recently used one, never another token's. Enough for one person's browsers,
 * or a team sharing a token.
 */
export const DEFAULT_HTTP_SESSIONS_PER_TOKEN = 16;
/** `server.http_failed_logins_burst`: failed dashboard logins one client address may make at once. */
export const DEFAULT_HTTP_FAILED_LOGINS_BURST = 10;
/**
 * `server.http_failed_logins_per_minute`: failed dashboard logins one client address may make a
 * minute once its burst is spent; past it, a login from there is answered 429 with Retry-After.
 */
export const DEFAULT_HTTP_FAILED_LOGINS_PER_MINUTE = 6;

const tokenSchema = z
  .strictObject({
    /** The bearer secret; at least 16 characters. Never logged. */
    token: z.string().min(16),
    role: z.enum(['tenant', 'worker', 'operator']),
    /** Required for, and only for, the `tenant` role. */
    tenant: z.string().min(1).max(128).optional(),
    /** A label for logs (the token itself never is). */
    name: z.string().min(1).optional(),
  })
  .superRefine((token, ctx) => {
    if (token.role === 'tenant' && token.tenant === undefined) {
      ctx.addIssue({ code: 'custom', path: ['tenant'], message: 'a tenant token must name its tenant' });
    }
    if (token.role !== 'tenant' && token.tenant !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['tenant'], message: `a ${token.role} token is not bound to a tenant` });
    }
  });

const serverSchema = z.strictObject({
  address: z
    .string()
    .regex(/^(\[[0-9a-fA-F:]+\]|[^:\s]+):\d{1,5}$/, 'must be host:port')
    .default(DEFAULT_ADDRESS),
  tokens: z.array(tokenSchema).default([]),
  tls_cert_file: z.string().min(1).optional(),
  tls_key_file: z.string().min(1).optional(),
  max_lease_wait_ms: timerMs(1).default(DEFAULT_MAX_LEASE_WAIT_MS),
  shutdown_grace_ms: timerMs(0).default(DEFAULT_SHUTDOWN_GRACE_MS),
  max_concurrent_calls: callCount.default(DEFAULT_MAX_CONCURRENT_CALLS),
  max_parked_calls: callCount.default(DEFAULT_MAX_PARKED_CALLS),
  /** HTTP: `/healthz`, `/readyz`, `/metrics` and the dashboard, with the same TLS and tokens as gRPC. Empty turns it off. */
  http_address: z
    .string()
    .regex(/^((\[[0-9a-fA-F:]+\]|[^:\s]+):\d{1,5})?$/, 'must be host:port, or empty to turn HTTP off')
    .default(DEFAULT_HTTP_ADDRESS),
  http_max_sessions: wholeNumber(1, 1_000_000, 'each session is held in memory').default(DEFAULT_HTTP_MAX_SESSIONS),
  http_sessions_per_token: wholeNumber(1, 10_000, 'one token is one principal').default(
    DEFAULT_HTTP_SESSIONS_PER_TOKEN,
  ),
  http_failed_logins_burst: wholeNumber(1, 10_000, 'each is a token guessed').default(DEFAULT_HTTP_FAILED_LOGINS_BURST),
  http_failed_logins_per_minute: wholeNumber(1, 60_000, 'one a millisecond').default(
    DEFAULT_HTTP_FAILED_LOGINS_PER_MINUTE,
  ),
});

/** `metrics.max_kinds`: distinct `kind` label values before the rest are counted as `other`. */
export const DEFAULT_METRICS_MAX_KINDS = 100;
/** `metrics.refresh_ms`: how stale the job-count gauges and store size may be (a scrape never waits on a count). */
export const DEFAULT_METRICS_REFRESH_MS = 5_000;

const metricsSchema = z.strictObject({
  /** Serve `/metrics` and watch the engine for it; off, the engine has no observer and costs nothing. */
  enabled: z.boolean().default(true),
  /** Add a `tenant` label to the job counters and histograms; off by default, as tenants may be many. */
  tenant_labels: z.boolean().default(false),
  max_kinds: wholeNumber(1, 10_000, 'each kind is a label value; more would flood the scrape').default(
    DEFAULT_METRICS_MAX_KINDS,
  ),
  refresh_ms: timerMs(1).default(DEFAULT_METRICS_REFRESH_MS),
});

/**
 * `watch.retain_secs`: how long the transitions log keeps an entry, and so how long a Watch resume
 * token stays good (at most; `watch.retain_events` may bound it sooner). Pruned by the maintenance
 * runner every `retention.prune_interval_secs` (only with `retention.enabled`).
 */
export const DEFAULT_WATCH_RETAIN_SECS = 86_400;
/**
 * `watch.retain_events`: the most entries the transitions log keeps. An entry is the job without
 * its payload, a few hundred bytes: 5,000,000 is about 1-2 GB on disk, and at 1,000 jobs/s (three
 * transitions each) about 28 minutes, when that comes before `watch.retain_secs`.
 */
export const DEFAULT_WATCH_RETAIN_EVENTS = 5_000_000;
/**
 * `watch.max_streams_per_principal`: Watch streams one token may hold open on a server; beyond it,
 * RESOURCE_EXHAUSTED. Each `client.watch()`, `client.result()` in flight and `onCompleted`,
 * `onFailed` or `onDead` listener is one stream. A stream that does not read costs the server one
 * message (up to 100 events) and the work of filling the client's buffers (bench/RESULTS.md,
 * unread Watch streams), so one tenant cannot hold hundreds of them against the others.
 */
export const DEFAULT_WATCH_MAX_STREAMS_PER_PRINCIPAL = 64;

const watchSchema = z.strictObject({
  /**
   * Keep the transitions log, in the same atomic write as each transition. Off, nothing is
   * appended (and the drain is a little faster; bench/RESULTS.md) and Watch, with `client.result`,
   * answers FAILED_PRECONDITION.
   */
  enabled: z.boolean().default(true),
  retain_secs: duration(1).default(DEFAULT_WATCH_RETAIN_SECS),
  retain_events: wholeNumber(1_000, 1_000_000_000, 'each entry is a row on disk').default(DEFAULT_WATCH_RETAIN_EVENTS),
  max_streams_per_principal: wholeNumber(1, 1_000_000, 'server.max_parked_calls bounds every stream').default(
    DEFAULT_WATCH_MAX_STREAMS_PER_PRINCIPAL,
  ),
});

const configSchema = z.strictObject({
  storage: storageSchema.default(storageSchema.parse({})),
  jobs: jobsSchema.default(jobsSchema.parse({})),
  retention: retentionSchema.default(retentionSchema.parse({})),
  schedules: schedulesSchema.default(schedulesSchema.parse({})),
  server: serverSchema.default(serverSchema.parse({})),
  metrics: metricsSchema.default(metricsSchema.parse({})),
  watch: watchSchema.default(watchSchema.parse({})),
});

export type TelhaConfig = z.infer<typeof configSchema>;
export type JobsConfig = TelhaConfig['jobs'];
export type StorageConfig = TelhaConfig['storage'];
export type RetentionConfig = TelhaConfig['retention'];
export type SchedulesConfig = TelhaConfig['schedules'];
export type ServerConfig = TelhaConfig['server'];
export type MetricsConfig = TelhaConfig['metrics'];
export type WatchConfig = TelhaConfig['watch'];
export type TokenConfig = ServerConfig['tokens'][number];

/** Every key with its default. */
export const DEFAULT_CONFIG: TelhaConfig = configSchema.parse({});

/** A plain, possibly partial configuration tree, as read from a file or built in code. */
export type ConfigInput = { readonly [section: string]: unknown };

/** Keys whose value zero is refused at load, with the reason. */
const ZERO_REFUSED: Readonly<Record<string, string>> = {
  'jobs.lease_ttl_secs': 'must be greater than 0: a zero TTL expires every lease at once',
  'jobs.max_attempts': 'must be greater than 0: a job needs at least one attempt',
};

/** `jobs.kinds."email:bulk".max_attempts`: a key that is not a bare word is quoted, as TOML writes it. */
function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, part) => {
    if (typeof part === 'number') return `${out}[${part}]`;
    const name = /^[A-Za-z0-9_-]+$/.test(String(part)) ? String(part) : JSON.stringify(String(part));
    return out === '' ? name : `${out}.${name}`;
  }, '');
}

function describeIssue(issue: z.core.$ZodIssue): { field: string; detail: string } {
  const path = formatPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((key) => (path ? `${path}.${key}` : key));
    return { field: keys[0] ?? path, detail: `unknown key${keys.length > 1 ? `s ${keys.join(', ')}` : ''}` };
  }
  const zeroReason = ZERO_REFUSED[path];
  if (zeroReason !== undefined && issue.code === 'too_small') return { field: path, detail: zeroReason };
  return { field: path, detail: issue.message };
}

/**
 * Merge the layers (later wins, key by key) and validate. Throws an
 * `invalid_argument` error naming the first offending key; `source` says where it came from.
 */
export function resolveConfig(layers: readonly { source: string; values: ConfigInput }[]): TelhaConfig {
  const merged: Record<string, Record<string, unknown>> = {};
  const origin = new Map<string, string>();
  for (const layer of layers) {
    for (const [section, value] of Object.entries(layer.values)) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw invalidArgument(section, `${section}: expected a table of keys (from ${layer.source})`);
      }
      const target = (merged[section] ??= {});
      for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
        target[key] = v;
        origin.set(`${section}.${key}`, layer.source);
      }
      if (!origin.has(section)) origin.set(section, layer.source);
    }
  }
  const result = configSchema.safeParse(merged);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  if (!first) throw invalidArgument('config', 'invalid configuration');
  const { field, detail } = describeIssue(first);
  // The layer that set the key (`section.key`), else the one that named its section.
  const [section, key] = field.split(/[.[]/);
  const from = origin.get(`${section}.${key}`) ?? origin.get(section ?? '');
  throw invalidArgument(field, from ? `${detail} (from ${from})` : detail);
}

/** Convenience for code and tests: defaults plus one partial tree. */
export function makeConfig(values: ConfigInput = {}): TelhaConfig {
  return resolveConfig([{ source: 'code', values }]);
}

const ENV_PREFIX = 'TELHA_';

/**
 * The configuration layer carried by environment variables: `TELHA_SECTION__KEY=value`.
 * Values are read as JSON when they parse (numbers, booleans), otherwise as strings.
 * Variables without the double underscore (e.g. `TELHA_CONFIG`, `TELHA_TOKEN`) are not
 * configuration keys and are left alone.
 */
export function configFromEnv(env: Readonly<Record<string, string | undefined>>): ConfigInput {
  const values: Record<string, Record<string, unknown>> = {};
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith(ENV_PREFIX) || raw === undefined) continue;
    const rest = name.slice(ENV_PREFIX.length);
    const split = rest.indexOf('__');
    if (split <= 0) continue;
    const section = rest.slice(0, split).toLowerCase();
    const key = rest.slice(split + 2).toLowerCase();
    (values[section] ??= {})[key] = parseEnvValue(raw);
  }
  return values;
}

function parseEnvValue(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}
