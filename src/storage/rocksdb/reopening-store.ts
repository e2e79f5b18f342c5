/**
 * A RocksDB store that comes back by itself after its disk filled up.
 *
 * A write RocksDB refuses for want of space leaves two things behind: RocksDB refuses every later
 * write (the error sticks until the database is reopened; the binding has no `Resume()`), and the
 * store's memory (live index, counters, cached records) may be ahead of the disk, since a claim
 * takes its jobs from the index before its write. So from the first such write this store answers
 * every write with `DiskFullError` (`resource_exhausted`, naming the store's directory), serves
 * reads from the store as it stands, and looks at the disk's free space every `spaceProbeMs`. Once
 * there is room for RocksDB to replay its log, it lets the calls in flight finish, closes the
 * store and opens it again: memory is rebuilt from what RocksDB holds, so every acknowledged write
 * is there and no refused one is (RocksDB's replay drops a log record a failed append left torn).
 */
import { statfs } from 'node:fs/promises';
import { resolve } from 'node:path';
import { DiskFullError, storeClosed } from '../../core/errors.ts';
import type { BlockedKey } from '../../core/ordered-keys.ts';
import type { KindLimit, KindLimitStatus } from '../../core/kind-limits.ts';
import type { TenantLimit, TenantLimitStatus } from '../../core/tenant-limits.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import type { Pause, PauseBounds, PauseScope } from '../../core/pauses.ts';
import type { Schedule, ScheduleFiring } from '../../core/schedules.ts';
import type { LogFilter, LogPage, LogPruneParams } from '../../core/transitions-log.ts';
import type { ItemResult, JobRecord, Micros, QueueScope, ScopeFilter } from '../../core/types.ts';
import type {
  BackupSummary,
  Change,
  ImportOutcome,
  KeysImportOutcome,
  StoredKeys,
  ClaimParams,
  CountRow,
  FiredSchedule,
  InsertOutcome,
  JobDraft,
  JobStore,
  ListPage,
  ListQuery,
  PruneParams,
  SchedulePage,
  ScheduleQuery,
  StoreMetrics,
  UpdateItem,
  UpdateOutcome,
} from '../types.ts';
import { RocksJobStore, type RocksStoreOptions } from './rocks-store.ts';

/**
 * How often a store whose disk filled up looks for space again (ms), by default: one `statfs`, so
 * writes resume well within a second of space coming back.
 */
export const SPACE_PROBE_MS = 250;

/**
 * Free bytes a reopen waits for: beyond what the disk had free when writes stopped, or when the
 * last reopen found it still full. A reopen writes what the write-ahead logs hold into new table
 * files, a new manifest and a new log; how much room that takes depends on the logs, and an
 * attempt on a disk still too full closes the store for reads too until the next one. So each
 * attempt waits for space to have grown since the last.
 */
const REOPEN_GAIN_BYTES = 1024 * 1024;

export interface ReopeningStoreOptions extends RocksStoreOptions {
  /** How often to look for space once the disk filled up (default `SPACE_PROBE_MS`). */
  readonly spaceProbeMs?: number;
}

export class ReopeningRocksStore implements JobStore {
  readonly backend = 'rocksdb';
  /** The store as last opened; closed while a reopen waits for space (`open` false). */
  private store: RocksJobStore;
  private open = true;
  /** Why writes are refused, from the first write the full disk refused until the reopen; `null` while accepted. */
  private stopped: DiskFullError | null = null;
  /** Calls running on `store`, which a reopen lets finish before it closes it. */
  private calls = 0;
  private idle: (() => void) | null = null;
  private reopening: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Waiters for writes to resume (`writable`). */
  private resumed: { readonly promise: Promise<void>; resolve(): void; reject(error: Error): void } | null = null;
  private readonly path: string;
  private readonly logger: Logger;
  private readonly probeMs: number;
  /** Free bytes on the disk when writes stopped (taken as none) or the last reopen failed. */
  private freeBefore = 0;

  private constructor(
    store: RocksJobStore,
    private readonly options: ReopeningStoreOptions,
  ) {
    this.store = store;
    this.path = resolve(options.path);
    this.logger = options.logger ?? silentLogger;
    this.probeMs = options.spaceProbeMs ?? SPACE_PROBE_MS;
  }

  /** Open the store; on a full disk this rejects with `DiskFullError`, naming the directory. */
  static async open(options: ReopeningStoreOptions): Promise<ReopeningRocksStore> {
    return new ReopeningRocksStore(await RocksJobStore.open(options), options);
  }

  /**
   * Resolves once the store takes writes: at once unless the disk filled up, else when space
   * came back and the store was reopened. Rejects if the store is closed first.
   */
  writable(): Promise<void> {
    if (this.closed) return Promise.reject(storeClosed());
    if (this.stopped === null) return Promise.resolve();
    if (this.resumed === null) {
      let settle!: { resolve(): void; reject(error: Error): void };
      const promise = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
      this.resumed = { promise, ...settle };
      // Someone waits on it now: the probe may keep the process alive.
      this.timer?.ref();
    }
    return this.resumed.promise;
  }

  /** `call` on the open store, once any reopen is over; a full disk it reports stops writes. */
  private run<T>(call: (store: RocksJobStore) => Promise<T>): Promise<T> {
    if (this.reopening !== null) return this.reopening.then(() => this.run(call));
    if (!this.open) return Promise.reject(this.closed ? storeClosed() : (this.stopped ?? storeClosed()));
    this.calls++;
    let result: Promise<T>;
    try {
      result = call(this.store);
    } catch (error) {
      result = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return result.then(
      (value) => {
        this.settled();
        return value;
      },
      (error: unknown) => {
        this.settled();
        if (error instanceof DiskFullError) this.stop(error);
        throw error;
      },
    );
  }

  private settled(): void {
    if (--this.calls === 0) this.idle?.();
  }

  private stop(error: DiskFullError): void {
    if (this.stopped !== null || this.closed) return;
    this.stopped = error;
    this.freeBefore = 0;
    this.logger.error(
      { path: this.path, err: error.cause instanceof Error ? error.cause.message : String(error.cause) },
      'the disk holding the store is full: writes are refused until space is freed',
    );
    this.schedule();
  }

  private schedule(): void {
    this.timer = setTimeout(() => void this.probe(), this.probeMs);
    // A forgotten store must not keep the process alive on its own; a waiter on `writable` does.
    if (this.resumed === null) this.timer.unref();
  }

  private async probe(): Promise<void> {
    this.timer = null;
    if (this.stopped === null || this.closed) return;
    if (await this.hasRoom()) await this.reopen();
    if (this.stopped !== null && !this.closed) this.schedule();
  }

  /** Whether the disk has `REOPEN_GAIN_BYTES` more free than when writes stopped or the last reopen failed. */
  private async hasRoom(): Promise<boolean> {
    try {
      const disk = await statfs(this.path);
      const free = disk.bavail * disk.bsize;
      if (free < this.freeBefore + REOPEN_GAIN_BYTES) return false;
      this.freeBefore = free;
      return true;
    } catch (error) {
      this.logger.warn({ path: this.path, err: (error as Error).message }, 'cannot read the free space of the disk');
      return false;
    }
  }

  /** Close the store once the calls on it finished, and open it again; on a still full disk it stays closed. */
  private reopen(): Promise<void> {
    this.reopening ??= (async () => {
      if (this.calls > 0) await new Promise<void>((resolve) => (this.idle = resolve));
      this.idle = null;
      if (this.open) {
        this.open = false;
        // RocksDB's close reports the write error it saw; the binding has let the store go regardless.
        await this.store.close().catch((error: unknown) => {
          this.logger.debug(
            { path: this.path, err: (error as Error).message },
            'closed the store after its disk filled',
          );
        });
      }
      const started = performance.now();
      try {
        this.store = await RocksJobStore.open(this.options);
      } catch (error) {
        if (error instanceof DiskFullError) {
          this.logger.warn({ path: this.path }, 'the disk holding the store is still too full to reopen it');
          return;
        }
        this.logger.error({ path: this.path, err: (error as Error).message }, 'cannot reopen the store');
        return;
      }
      this.open = true;
      this.stopped = null;
      const reopenMs = Math.round(performance.now() - started);
      this.logger.info({ path: this.path, reopenMs }, 'space is back on the disk holding the store: writes resumed');
      this.resumed?.resolve();
      this.resumed = null;
    })().finally(() => {
      this.reopening = null;
    });
    return this.reopening;
  }

  insert(drafts: readonly JobDraft[], now: Micros): Promise<InsertOutcome[]> {
    return this.run((store) => store.insert(drafts, now));
  }

  importJobs(records: readonly JobRecord[], now: Micros): Promise<ImportOutcome> {
    return this.run((store) => store.importJobs(records, now));
  }

  storedKeys(): Promise<StoredKeys> {
    return this.run((store) => store.storedKeys());
  }

  importKeys(keys: StoredKeys): Promise<KeysImportOutcome> {
    return this.run((store) => store.importKeys(keys));
  }

  /** A backup reads the store as it stands; it may run while a full disk stops writes. */
  backup(target: string): Promise<BackupSummary> {
    return this.run((store) => store.backup(target));
  }

  claim(params: ClaimParams): Promise<JobRecord[]> {
    return this.run((store) => store.claim(params));
  }

  update(jobId: string, change: (current: JobRecord) => Change, now: Micros): Promise<UpdateOutcome> {
    return this.run((store) => store.update(jobId, change, now));
  }

  updateMany(items: readonly UpdateItem[], now: Micros): Promise<ItemResult<JobRecord>[]> {
    return this.run((store) => store.updateMany(items, now));
  }

  expiredLeases(now: Micros, limit: number): Promise<string[]> {
    return this.run((store) => store.expiredLeases(now, limit));
  }

  leased(scope: ScopeFilter, workerId: string | null, limit: number): Promise<JobRecord[]> {
    return this.run((store) => store.leased(scope, workerId, limit));
  }

  prune(params: PruneParams): Promise<number> {
    return this.run((store) => store.prune(params));
  }

  get(jobId: string): Promise<JobRecord | null> {
    return this.run((store) => store.get(jobId));
  }

  list(query: ListQuery): Promise<ListPage> {
    return this.run((store) => store.list(query));
  }

  counts(scope: ScopeFilter): Promise<CountRow[]> {
    return this.run((store) => store.counts(scope));
  }

  createSchedule(schedule: Schedule, maxPerScope: number): Promise<void> {
    return this.run((store) => store.createSchedule(schedule, maxPerScope));
  }

  updateSchedule(scope: QueueScope, name: string, change: (current: Schedule) => Schedule): Promise<Schedule> {
    return this.run((store) => store.updateSchedule(scope, name, change));
  }

  getSchedule(scope: QueueScope, name: string): Promise<Schedule | null> {
    return this.run((store) => store.getSchedule(scope, name));
  }

  listSchedules(query: ScheduleQuery): Promise<SchedulePage> {
    return this.run((store) => store.listSchedules(query));
  }

  deleteSchedule(scope: QueueScope, name: string): Promise<boolean> {
    return this.run((store) => store.deleteSchedule(scope, name));
  }

  fireDueSchedules(
    now: Micros,
    limit: number,
    fire: (schedule: Schedule) => ScheduleFiring | null,
  ): Promise<FiredSchedule[]> {
    return this.run((store) => store.fireDueSchedules(now, limit, fire));
  }

  pauseKinds(pause: Pause, bounds: PauseBounds): Promise<Pause> {
    return this.run((store) => store.pauseKinds(pause, bounds));
  }

  blockedKeys(filter: ScopeFilter, limit: number): Promise<BlockedKey[]> {
    return this.run((store) => store.blockedKeys(filter, limit));
  }

  releaseKey(scope: QueueScope, orderKey: string, now: Micros): Promise<JobRecord | null> {
    return this.run((store) => store.releaseKey(scope, orderKey, now));
  }

  resumeKinds(scope: PauseScope, kindPrefix: string): Promise<boolean> {
    return this.run((store) => store.resumeKinds(scope, kindPrefix));
  }

  listPauses(filter: ScopeFilter): Promise<Pause[]> {
    return this.run((store) => store.listPauses(filter));
  }

  logHead(): Promise<string> {
    return this.run((store) => store.logHead());
  }

  readLog(after: string, limit: number, filter: LogFilter): Promise<LogPage> {
    return this.run((store) => store.readLog(after, limit, filter));
  }

  pruneLog(params: LogPruneParams): Promise<number> {
    return this.run((store) => store.pruneLog(params));
  }

  setKindLimit(limit: KindLimit, maxTotal: number): Promise<KindLimit> {
    return this.run((store) => store.setKindLimit(limit, maxTotal));
  }

  clearKindLimit(kindPrefix: string): Promise<boolean> {
    return this.run((store) => store.clearKindLimit(kindPrefix));
  }

  listKindLimits(now: Micros): Promise<KindLimitStatus[]> {
    return this.run((store) => store.listKindLimits(now));
  }

  setTenantLimit(limit: TenantLimit, maxTotal: number): Promise<TenantLimit> {
    return this.run((store) => store.setTenantLimit(limit, maxTotal));
  }

  clearTenantLimit(tenant: string): Promise<boolean> {
    return this.run((store) => store.clearTenantLimit(tenant));
  }

  listTenantLimits(now: Micros): Promise<TenantLimitStatus[]> {
    return this.run((store) => store.listTenantLimits(now));
  }

  nextGateAt(scope: ScopeFilter, now: Micros): Promise<Micros | null> {
    return this.run((store) => store.nextGateAt(scope, now));
  }

  /** Not ready while writes are refused: rejects with the `DiskFullError` saying why. */
  health(): Promise<void> {
    if (this.stopped !== null) return Promise.reject(this.stopped);
    return this.run((store) => store.health());
  }

  stats(): ReturnType<RocksJobStore['stats']> {
    return this.store.stats();
  }

  /** The store's figures, with `writeStopped` and `diskFull` set while the full disk refuses writes. */
  async metrics(): Promise<StoreMetrics> {
    const figures = this.stopped !== null && !this.open ? {} : await this.run((store) => store.metrics());
    const diskFull = this.stopped !== null;
    return { ...figures, writeStopped: diskFull || figures.writeStopped === true, diskFull };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.reopening;
    this.resumed?.reject(storeClosed());
    this.resumed = null;
    if (!this.open) return;
    this.open = false;
    if (this.stopped === null) return this.store.close();
    // As in a reopen: RocksDB's close reports the write error it saw, and lets the store go anyway.
    await this.store.close().catch(() => undefined);
  }
}
