/**
 * What the HTTP side knows about the queue without asking the store on every
 * request: one observer on the engine feeding the metrics and the chart
 * samples, cached counts, the store's figures refreshed once per
 * `metrics.refresh_ms`, and the gRPC server's calls and Work streams.
 */
import type { TelhaConfig } from '../core/config.ts';
import type { Logger } from '../core/logger.ts';
import type { CountRow } from '../core/types.ts';
import { ANY_SCOPE, JOB_STATE_NAMES } from '../core/types.ts';
import { observeEach, type QueueObservation } from '../engine/observers.ts';
import type { Queue, StoreMetrics } from '../engine/queue.ts';
import type { Status } from '../wire/service.ts';
import { CountsCache } from './counts.ts';
import { QueueMetrics, type LoginRefusal } from './metrics.ts';
import { Samples, type Sample } from './samples.ts';

/** Tenants the overview lists counts for, at most: those tokens name, then those seen since start. */
export const MAX_KNOWN_TENANTS = 100;

/** What the gRPC server reports: each answered call, and Work streams opening and closing. */
export interface CallObserver {
  call(method: string, code: Status): void;
  workStream(delta: 1 | -1): void;
}

export class Telemetry implements CallObserver {
  readonly counts: CountsCache;
  readonly samples: Samples;
  /** `null` with `metrics.enabled = false`: no `/metrics`, no counters kept. */
  readonly metrics: QueueMetrics | null;
  private readonly known = new Set<string>();
  private readonly listeners = new Set<(sample: Sample) => void>();
  private readonly unobserve: () => void;
  private figures: StoreMetrics = {};
  private figuresAt = -Infinity;
  private streams = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastTick: number;
  private stopped = false;

  constructor(
    private readonly queue: Queue,
    config: TelhaConfig,
    private readonly logger: Logger,
  ) {
    const refreshMs = config.metrics.refresh_ms;
    const tokenTenants = config.server.tokens.flatMap((t) => (t.tenant === undefined ? [] : [t.tenant]));
    for (const tenant of tokenTenants) this.known.add(tenant);
    this.counts = new CountsCache(queue, refreshMs, () => this.nowMs());
    this.samples = new Samples(refreshMs, tokenTenants);
    this.metrics = config.metrics.enabled
      ? new QueueMetrics(config.metrics, {
          counts: () => this.counts.get(ANY_SCOPE),
          store: () => this.storeMetrics(),
          parkedLeases: () => queue.waits.parked,
          workStreams: () => this.streams,
          pauses: async () => (await queue.pauses()).length,
          kindLimits: () => queue.kindLimits(),
          tenantLimits: () => queue.tenantLimits(),
          nowMicros: () => queue.clock.now(),
        })
      : null;
    const metrics = this.metrics;
    const samples = this.samples;
    this.unobserve = observeEach(queue.events, (observation: QueueObservation) => {
      samples.observe(observation);
      metrics?.observe(observation);
      if (observation.type === 'transition') this.noteTenant(observation.record.tenant);
    });
    this.lastTick = this.nowMs();
  }

  /** Start taking a sample every `metrics.refresh_ms`. */
  start(): void {
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.unobserve();
    this.listeners.clear();
  }

  call(method: string, code: Status): void {
    this.metrics?.grpcCall(method, code);
  }

  workStream(delta: 1 | -1): void {
    this.streams += delta;
  }

  /** A dashboard login refused, and why. */
  loginRefused(reason: LoginRefusal): void {
    this.metrics?.loginRefused(reason);
  }

  /** Tenants to show counts for: named by tokens, or seen in a transition since start. */
  tenants(): string[] {
    return [...this.known].sort();
  }

  /** Be called with each new queue-wide sample; returns the unsubscribe. */
  onSample(listener: (sample: Sample) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** The store's figures, at most `metrics.refresh_ms` old. */
  async storeMetrics(): Promise<StoreMetrics> {
    if (this.nowMs() - this.figuresAt >= this.samples.intervalMs) {
      this.figures = await this.queue.storeMetrics();
      this.figuresAt = this.nowMs();
    }
    return this.figures;
  }

  /** Jobs in each state, summed over kinds, by state name: what the live stream sends. */
  static byStateNames(rows: readonly CountRow[]): Record<string, number> {
    const totals: Record<string, number> = { pending: 0, leased: 0, completed: 0, dead: 0, cancelled: 0 };
    for (const row of rows) {
      const name = JOB_STATE_NAMES[row.state];
      totals[name] = (totals[name] ?? 0) + row.count;
    }
    return totals;
  }

  private noteTenant(tenant: string | null): void {
    if (tenant === null || this.known.has(tenant) || this.known.size >= MAX_KNOWN_TENANTS) return;
    this.known.add(tenant);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick().finally(() => this.schedule()), this.samples.intervalMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const now = this.nowMs();
    const seconds = Math.max(0.001, (now - this.lastTick) / 1000);
    this.lastTick = now;
    let oldest: number | null = null;
    try {
      const figures = await this.storeMetrics();
      if (figures.oldestPendingAt !== undefined)
        oldest =
          figures.oldestPendingAt === null ? 0 : Math.max(0, (this.queue.clock.now() - figures.oldestPendingAt) / 1e6);
    } catch (error) {
      // A closing or unreachable store: the sample still records throughput.
      this.logger.debug({ err: (error as Error).message }, 'store figures unavailable for this sample');
    }
    const sample = this.samples.tick(now / 1000, seconds, oldest);
    for (const listener of this.listeners) listener(sample);
  }

  private nowMs(): number {
    return this.queue.clock.now() / 1000;
  }
}
