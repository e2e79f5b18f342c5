/**
 * Job counts per scope, cached: the gauges, the overview and the live stream
 * read them often, the store is asked at most once per `metrics.refresh_ms`
 * per scope (RocksDB keeps counters in memory; PostgreSQL counts with a
 * query). Callers asking together share one refresh.
 */
import { tenantScope, type CountRow, type ScopeFilter } from '../core/types.ts';
import type { Queue } from '../engine/queue.ts';

interface Entry {
  rows: readonly CountRow[];
  at: number;
  refreshing: Promise<readonly CountRow[]> | null;
}

/** Cached scopes at most: the global one, and tenants as the dashboard asks for them. */
const MAX_SCOPES = 1_000;

export class CountsCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly queue: Queue,
    private readonly refreshMs: number,
    private readonly nowMs: () => number,
  ) {}

  /** Counts of `scope`, at most `refresh_ms` old. */
  get(scope: ScopeFilter): Promise<readonly CountRow[]> {
    const key = scopeKey(scope);
    const entry = this.entries.get(key);
    if (entry !== undefined && this.nowMs() - entry.at < this.refreshMs) return Promise.resolve(entry.rows);
    if (entry?.refreshing) return entry.refreshing;
    return this.refresh(key, scope, entry);
  }

  /** Counts for a tenant's scope. */
  tenant(tenant: string): Promise<readonly CountRow[]> {
    return this.get(tenantScope(tenant));
  }

  private refresh(key: string, scope: ScopeFilter, entry: Entry | undefined): Promise<readonly CountRow[]> {
    const target: Entry = entry ?? { rows: [], at: -Infinity, refreshing: null };
    if (entry === undefined) {
      if (this.entries.size >= MAX_SCOPES) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(key, target);
    }
    target.refreshing = this.queue.counts(scope).then(
      (rows) => {
        target.rows = rows;
        target.at = this.nowMs();
        target.refreshing = null;
        return rows;
      },
      (error: unknown) => {
        target.refreshing = null;
        throw error;
      },
    );
    return target.refreshing;
  }
}

function scopeKey(scope: ScopeFilter): string {
  switch (scope.type) {
    case 'any':
      return '*';
    case 'system':
      return 's';
    case 'tenant':
      return `t:${scope.tenant}`;
  }
}
