/**
 * Prometheus metrics with prom-client, on a registry of our own (so two
 * servers in one process, as in tests, never share counters).
 *
 * Counters and histograms are fed by the queue's observer as transitions
 * commit; gauges of jobs by state and kind come from the cached counts, so
 * a scrape never scans the store. Label values are bounded: at most
 * `metrics.max_kinds` kinds (the rest are `other`), and a `tenant` label
 * only with `metrics.tenant_labels`.
 */
import client from 'prom-client';
import type { MetricsConfig } from '../core/config.ts';
import type { KindLimitStatus } from '../core/kind-limits.ts';
import type { TenantLimitStatus } from '../core/tenant-limits.ts';
import { JOB_STATE_NAMES, JobState, type CountRow, type JobRecord } from '../core/types.ts';
import type { QueueObservation } from '../engine/observers.ts';
import type { StoreMetrics } from '../engine/queue.ts';
import { Status } from '../wire/service.ts';

const STATUS_NAMES: ReadonlyMap<number, string> = new Map(Object.entries(Status).map(([name, code]) => [code, name]));

/** Why a dashboard login was refused: the `reason` of `telha_dashboard_logins_refused_total`. */
export const LOGIN_REFUSALS = ['bad_token', 'not_allowed', 'throttled', 'sessions_full'] as const;
export type LoginRefusal = (typeof LOGIN_REFUSALS)[number];

/** The label a kind past `metrics.max_kinds` is counted under. */
export const OTHER_KIND = 'other';

/** Seconds; enqueue-to-lease waits and run times from 1 ms to 1 h. */
const TIME_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];

/** Which counter each transition adds to. */
const COUNTED: Readonly<Record<string, CounterName>> = {
  enqueue: 'enqueued',
  lease: 'leased',
  complete: 'completed',
  fail: 'failed',
  reap: 'reaped',
  retry: 'retried',
  release: 'released',
  cancel: 'cancelled',
};
type CounterName =
  'enqueued' | 'leased' | 'completed' | 'failed' | 'dead' | 'reaped' | 'retried' | 'released' | 'cancelled';
const COUNTER_HELP: Readonly<Record<CounterName, string>> = {
  enqueued: 'Jobs created (a repeated idempotency key creates none).',
  leased: 'Leases granted.',
  completed: 'Jobs completed.',
  failed: 'Failed attempts reported by workers (retried or dead-lettered).',
  dead: 'Jobs dead-lettered, by a failure or by the reaper.',
  reaped: 'Expired leases reclaimed by the reaper.',
  retried: 'Dead or Cancelled jobs moved back to Pending by an operator.',
  released: 'Leases handed back by their workers without an attempt counted.',
  cancelled: 'Pending or Leased jobs cancelled by an operator or their tenant.',
};

/** Observations of one histogram series: counts per bucket (not cumulative), their sum and count. */
class Buckets {
  readonly counts = new Float64Array(TIME_BUCKETS.length);
  sum = 0;
  count = 0;

  observe(seconds: number): void {
    this.sum += seconds;
    this.count++;
    for (let i = 0; i < TIME_BUCKETS.length; i++) {
      if (seconds <= (TIME_BUCKETS[i] as number)) {
        (this.counts[i] as number)++;
        return;
      }
    }
  }
}

/**
 * One (kind[, tenant]) label set's numbers, kept as plain numbers: the hot
 * path adds to them, and prom-client reads them only when scraped. Going
 * through prom-client's own `inc`/`observe` would hash the label set and
 * validate it on every transition, five times per job.
 */
interface Series {
  readonly labels: Readonly<Record<string, string>>;
  readonly counters: Record<CounterName, number>;
  readonly wait: Buckets;
  readonly runCompleted: Buckets;
  readonly runFailed: Buckets;
}

/** A metric prom-client's registry reads through `get()`, its values computed from our series at scrape time. */
interface Collected {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator: 'sum';
  get(): Promise<{
    name: string;
    help: string;
    type: 'counter' | 'histogram';
    aggregator: 'sum';
    values: { value: number; labels: Record<string, string | number>; metricName?: string }[];
  }>;
  reset(): void;
}

function collected(
  name: string,
  help: string,
  type: 'counter' | 'histogram',
  values: () => { value: number; labels: Record<string, string | number>; metricName?: string }[],
): Collected {
  return {
    name,
    help,
    type,
    aggregator: 'sum',
    get: () => Promise.resolve({ name, help, type, aggregator: 'sum', values: values() }),
    reset: () => undefined,
  };
}

function histogramValues(
  name: string,
  series: Iterable<{ labels: Readonly<Record<string, string>>; buckets: Buckets }>,
): { value: number; labels: Record<string, string | number>; metricName: string }[] {
  const out: { value: number; labels: Record<string, string | number>; metricName: string }[] = [];
  for (const { labels, buckets } of series) {
    let cumulative = 0;
    TIME_BUCKETS.forEach((le, i) => {
      cumulative += buckets.counts[i] as number;
      out.push({ value: cumulative, labels: { ...labels, le }, metricName: `${name}_bucket` });
    });
    out.push({ value: buckets.count, labels: { ...labels, le: '+Inf' }, metricName: `${name}_bucket` });
    out.push({ value: buckets.sum, labels: { ...labels }, metricName: `${name}_sum` });
    out.push({ value: buckets.count, labels: { ...labels }, metricName: `${name}_count` });
  }
  return out;
}

export interface MetricsSources {
  /** Counts of every scope, at most `refresh_ms` old. */
  counts(): Promise<readonly CountRow[]>;
  /** The store's figures as of the last refresh. */
  store(): Promise<StoreMetrics>;
  parkedLeases(): number;
  workStreams(): number;
  /** Pauses held now, in every scope. */
  pauses(): Promise<number>;
  /** Kind limits with their lanes now (at most `MAX_KIND_LIMITS`, so a bounded label set). */
  kindLimits(): Promise<readonly KindLimitStatus[]>;
  /** Tenant limits with their tenants now (at most `MAX_TENANT_LIMITS`). */
  tenantLimits(): Promise<readonly TenantLimitStatus[]>;
  nowMicros(): number;
}

export class QueueMetrics {
  readonly registry = new client.Registry();
  private readonly kinds = new Set<string>();
  private readonly series = new Map<string, Series>();
  private readonly refused: client.Counter;
  private readonly grpc: client.Counter;
  private readonly logins: client.Counter;

  constructor(
    private readonly config: MetricsConfig,
    sources: MetricsSources,
  ) {
    const registers = [this.registry];
    client.collectDefaultMetrics({ register: this.registry });
    const all = (): Series[] => [...this.series.values()];
    for (const name of Object.keys(COUNTER_HELP) as CounterName[]) {
      this.registry.registerMetric(
        collected(`telha_jobs_${name}_total`, COUNTER_HELP[name], 'counter', () =>
          all().map((series) => ({ value: series.counters[name], labels: { ...series.labels } })),
        ) as unknown as client.Metric,
      );
    }
    this.registry.registerMetric(
      collected(
        'telha_job_wait_seconds',
        'From when a job became ready (enqueued, gate opened, failed or retried) to its lease.',
        'histogram',
        () =>
          histogramValues(
            'telha_job_wait_seconds',
            all().map((x) => ({ labels: x.labels, buckets: x.wait })),
          ),
      ) as unknown as client.Metric,
    );
    this.registry.registerMetric(
      collected('telha_job_run_seconds', 'From a lease to its completion or failure, by outcome.', 'histogram', () =>
        histogramValues(
          'telha_job_run_seconds',
          all().flatMap((x) => [
            { labels: { ...x.labels, outcome: 'completed' }, buckets: x.runCompleted },
            { labels: { ...x.labels, outcome: 'failed' }, buckets: x.runFailed },
          ]),
        ),
      ) as unknown as client.Metric,
    );
    this.refused = new client.Counter({
      name: 'telha_fenced_refused_total',
      help: 'Fenced submissions refused because the caller no longer held the lease, by reason.',
      labelNames: ['reason'],
      registers,
    });
    // Every reason exists from the start, so a rate() over them never starts from nothing.
    this.refused.labels('worker_mismatch').inc(0);
    this.refused.labels('generation_superseded').inc(0);
    this.refused.labels('cancelled').inc(0);
    this.grpc = new client.Counter({
      name: 'telha_grpc_calls_total',
      help: 'gRPC calls answered, by method and status code (a Work stream counts when it ends).',
      labelNames: ['method', 'code'],
      registers,
    });
    this.logins = new client.Counter({
      name: 'telha_dashboard_logins_refused_total',
      help: 'Dashboard logins refused, by reason: an unknown token, a token that may not log in, a client address throttled after its failures, or every session taken.',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of LOGIN_REFUSALS) this.logins.labels(reason).inc(0);
    const capKind = (kind: string): string => this.kindLabel(kind);
    new client.Gauge({
      name: 'telha_jobs',
      help: `Jobs stored, by state and kind (at most metrics.refresh_ms old).`,
      labelNames: ['state', 'kind'],
      registers,
      async collect() {
        const totals = new Map<string, { state: string; kind: string; count: number }>();
        for (const row of await sources.counts()) {
          const state = JOB_STATE_NAMES[row.state];
          const kind = capKind(row.kind);
          const key = `${state}\u0000${kind}`;
          const total = totals.get(key) ?? { state, kind, count: 0 };
          total.count += row.count;
          totals.set(key, total);
        }
        this.reset();
        for (const { state, kind, count } of totals.values()) this.labels(state, kind).set(count);
      },
    });
    const gauge = (name: string, help: string, read: () => number | Promise<number | null> | null): void => {
      new client.Gauge({
        name,
        help,
        registers,
        async collect() {
          const value = await read();
          if (value === null) this.reset();
          else this.set(value);
        },
      });
    };
    gauge('telha_lease_waits_parked', 'Lease long-polls waiting for work now.', () => sources.parkedLeases());
    gauge('telha_work_streams_open', 'Work streams (SDK workers) connected now.', () => sources.workStreams());
    gauge('telha_pauses', 'Kind prefixes paused now, in every scope.', () => sources.pauses());
    // One series per limit, labelled by what it limits.
    const labelledGauge = <L>(
      label: string,
      list: () => Promise<readonly L[]>,
      labelOf: (limit: L) => string,
    ): ((name: string, help: string, read: (limit: L) => number | null) => void) => {
      return (name, help, read) => {
        new client.Gauge({
          name,
          help,
          labelNames: [label],
          registers,
          async collect() {
            const limits = await list();
            this.reset();
            for (const limit of limits) {
              const value = read(limit);
              if (value !== null) this.labels(labelOf(limit)).set(value);
            }
          },
        });
      };
    };
    // At most MAX_KIND_LIMITS = 100 kind limits: a bounded label set.
    const limitGauge = labelledGauge(
      'kind_prefix',
      () => sources.kindLimits(),
      (l) => l.kindPrefix,
    );
    limitGauge('telha_kind_limit_leased', 'Jobs of each kind limit lane leased now.', (l) => l.leased);
    limitGauge(
      'telha_kind_limit_concurrency',
      'The concurrency of each kind limit that sets one.',
      (l) => l.concurrency,
    );
    limitGauge('telha_kind_limit_tokens', 'Whole tokens left now in each rate-limited lane.', (l) => l.tokens);
    gauge('telha_tenant_limits', 'Tenant limits held now.', async () => (await sources.tenantLimits()).length);
    // A series per limited tenant only with `metrics.tenant_labels`: tenants are an unbounded label set.
    if (config.tenant_labels) {
      const tenantGauge = labelledGauge(
        'tenant',
        () => sources.tenantLimits(),
        (l) => l.tenant,
      );
      tenantGauge('telha_tenant_limit_leased', 'Jobs of each limited tenant leased now.', (l) => l.leased);
      tenantGauge(
        'telha_tenant_limit_concurrency',
        'The concurrency of each tenant limit that sets one.',
        (l) => l.concurrency,
      );
      tenantGauge('telha_tenant_limit_tokens', 'Whole tokens left now for each rate-limited tenant.', (l) => l.tokens);
      tenantGauge('telha_tenant_limit_weight', "Each limited tenant's weight in the fair order.", (l) => l.weight);
    }
    const fromStore =
      (read: (m: StoreMetrics) => number | boolean | null | undefined) => async (): Promise<number | null> => {
        const value = read(await sources.store());
        return value === undefined || value === null ? null : Number(value);
      };
    gauge(
      'telha_store_size_bytes',
      'Bytes the store occupies on disk.',
      fromStore((m) => m.sizeBytes),
    );
    gauge(
      'telha_store_live_data_bytes',
      'RocksDB: estimated live data, without versions awaiting compaction.',
      fromStore((m) => m.liveDataBytes),
    );
    gauge(
      'telha_store_write_stopped',
      'RocksDB: 1 while writes are stopped (a stall, or a full disk).',
      fromStore((m) => m.writeStopped),
    );
    gauge(
      'telha_store_disk_full',
      'RocksDB: 1 while the disk holding the store is full and writes are refused.',
      fromStore((m) => m.diskFull),
    );
    gauge(
      'telha_store_delayed_write_rate_bytes',
      'RocksDB: the delayed write rate in bytes/s; 0 unless writes are being slowed.',
      fromStore((m) => m.delayedWriteRateBytes),
    );
    gauge(
      'telha_oldest_pending_age_seconds',
      'Age of the oldest Pending job (ready or waiting on a gate); 0 when none is Pending.',
      fromStore((m) =>
        m.oldestPendingAt === undefined
          ? undefined
          : m.oldestPendingAt === null
            ? 0
            : Math.max(0, (sources.nowMicros() - m.oldestPendingAt) / 1e6),
      ),
    );
  }

  /** Count one observed transition or refusal. Cheap: a map lookup and a few additions. */
  observe(observation: QueueObservation): void {
    if (observation.type === 'refused') {
      this.refused.labels(observation.reason).inc();
      return;
    }
    const { transition, record, at } = observation;
    const series = this.seriesOf(record);
    const counter = COUNTED[transition];
    if (counter !== undefined) series.counters[counter]++;
    if (record.state === JobState.Dead && observation.previous !== JobState.Dead) series.counters.dead++;
    if (transition === 'lease') {
      series.wait.observe(Math.max(0, at - readySince(record)) / 1e6);
    } else if (transition === 'complete' || transition === 'fail') {
      const leasedAt = lastLeasedAt(record);
      if (leasedAt !== null)
        (transition === 'complete' ? series.runCompleted : series.runFailed).observe(Math.max(0, at - leasedAt) / 1e6);
    }
  }

  /** Count one answered gRPC call. */
  loginRefused(reason: LoginRefusal): void {
    this.logins.labels(reason).inc();
  }

  grpcCall(method: string, code: Status): void {
    this.grpc.labels(method, STATUS_NAMES.get(code) ?? String(code)).inc();
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The label for `kind`: itself while fewer than `max_kinds` kinds were seen, else `other`. */
  kindLabel(kind: string): string {
    if (this.kinds.has(kind)) return kind;
    if (this.kinds.size >= this.config.max_kinds) return OTHER_KIND;
    this.kinds.add(kind);
    return kind;
  }

  private seriesOf(record: JobRecord): Series {
    const kind = this.kindLabel(record.kind);
    const tenant = this.config.tenant_labels ? (record.tenant ?? '') : null;
    const key = tenant === null ? kind : `${kind}\u0000${tenant}`;
    let series = this.series.get(key);
    if (series === undefined) {
      series = {
        labels: tenant === null ? { kind } : { kind, tenant },
        counters: {
          enqueued: 0,
          leased: 0,
          completed: 0,
          failed: 0,
          dead: 0,
          reaped: 0,
          retried: 0,
          released: 0,
          cancelled: 0,
        },
        wait: new Buckets(),
        runCompleted: new Buckets(),
        runFailed: new Buckets(),
      };
      this.series.set(key, series);
    }
    return series;
  }
}

/** When a just-leased job became ready: the event before its lease, or its gate if that opened later. */
function readySince(record: JobRecord): number {
  const before = record.events[record.events.length - 2];
  const since = before?.at ?? record.createdAt;
  return record.notBefore !== null && record.notBefore > since ? record.notBefore : since;
}

function lastLeasedAt(record: JobRecord): number | null {
  for (let i = record.events.length - 1; i >= 0; i--) {
    const event = record.events[i];
    if (event?.transition === 'leased') return event.at;
  }
  return null;
}
