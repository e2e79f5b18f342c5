/**
 * The store's LISTEN connection and what travels on it: other servers' work notices wake this
 * store's lease waiters, log notices wake its watchers, and servers whose readers follow the log
 * say so, so that log notices go out only while somebody reads them. The connection reconnects
 * after the poll interval when it is lost; meanwhile waiters fall back to polling.
 */
import pg from 'pg';
import { logsTransition } from '../../core/transitions-log.ts';
import type { JobRecord, WorkNotice } from '../../core/types.ts';
import { PG_APPLICATION_NAME, type StoreContext } from './connection.ts';
import { followersPayload, logNoticePayload, parseNotice } from './notices.ts';

/** The least time between two log notifications of one server: what it may add to a watcher's latency elsewhere. */
const LOG_NOTICE_GAP_MS = 5;
/**
 * How long another server's word that its readers follow the log holds (`logFollowed`): it says
 * so again every third of this while they do, and when a server that starts listening asks.
 */
const FOLLOWERS_NOTICE_TTL_MS = 30_000;

/** `Listener.announced`, as the parts that commit transitions are handed it. */
export type Announce = <T extends readonly JobRecord[]>(records: T) => T;

/** The store's LISTEN connection, the notices it hears and the log notices it sends. */
export class Listener {
  private onWork: ((notices: readonly WorkNotice[] | 'all') => void) | null = null;
  private onLog: (() => void) | null = null;
  /** A log notification is on its way; `announceAgain`: send one more when it is done. */
  private announcing = false;
  /** Readers in this process follow the log (`logFollowed`); while they do, a timer repeats the word. */
  private followedHere = false;
  private followersTimer: NodeJS.Timeout | null = null;
  /** Until when (`performance.now()`) another server's readers follow the log: log notices go out only before it. */
  private followedElsewhereUntil = 0;
  private logNotices = 0;
  private announceAgain = false;
  private listener: pg.Client | null = null;
  private listenerBackendPid: number | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ctx: StoreContext,
    private readonly url: string,
    /** How long to wait before reconnecting a lost connection. */
    private readonly pollIntervalMs: number,
  ) {}

  watch(onWork: (notices: readonly WorkNotice[] | 'all') => void): void {
    this.onWork = onWork;
  }

  /** Whether the LISTEN connection is up (while it is down, waiters fall back to polling). */
  get listening(): boolean {
    return this.listener !== null;
  }

  /** Log notifications this store sent (`announced`), for operators and tests. */
  get logNoticesSent(): number {
    return this.logNotices;
  }

  /** Whether another server said its readers follow the log, recently enough that it still holds. */
  get followedElsewhere(): boolean {
    return performance.now() < this.followedElsewhereUntil;
  }

  /** The backend process id of the LISTEN connection, for operators and tests. */
  get listenerPid(): number | null {
    return this.listener === null ? null : this.listenerBackendPid;
  }

  /** Connect the LISTEN connection; on loss, reconnect after the poll interval and tell waiters to look again. */
  async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, fallback_application_name: PG_APPLICATION_NAME });
    const lost = (error?: Error): void => {
      if (this.listener !== client) return;
      this.listener = null;
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      if (this.ctx.closing) return;
      this.ctx.logger.warn(
        { err: error?.message ?? 'connection ended' },
        'postgres listener lost; polling until it is back',
      );
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => {
      const notice = message.payload === undefined ? null : parseNotice(message.payload);
      if (notice === null || notice.origin === this.ctx.origin) return;
      if (notice.followers === true) {
        this.followedElsewhereUntil = performance.now() + FOLLOWERS_NOTICE_TTL_MS;
        return;
      }
      if (notice.ask === true) {
        if (this.followedHere) this.noticeFollowers();
        return;
      }
      if (notice.work !== null) this.onWork?.(notice.work);
      // Any write of another process (a server, an application's transaction) may have appended.
      this.onLog?.();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.ctx.schema.channel}`);
      // Servers whose readers follow the log say so at once, rather than at their next repeat.
      await client.query('SELECT pg_notify($1, $2)', [
        this.ctx.schema.channel,
        followersPayload(this.ctx.origin, true),
      ]);
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      this.listenerBackendPid = rows[0]?.pid ?? null;
    } catch (error) {
      // Not yet the listener, so `lost` ignores it: close it here, or its socket lingers.
      void client.end().catch(() => undefined);
      throw error;
    }
    this.listener = client;
  }

  private scheduleReconnect(): void {
    if (this.ctx.closing || this.reconnectTimer !== null) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.listen().then(
        // Work may have appeared while nobody listened.
        () => {
          this.onWork?.('all');
          this.onLog?.();
        },
        (error: unknown) => {
          this.ctx.logger.warn({ err: (error as Error).message }, 'postgres listener reconnect failed');
          this.scheduleReconnect();
        },
      );
    }, this.pollIntervalMs);
    this.reconnectTimer.unref();
  }

  watchLog(onAppend: () => void): void {
    this.onLog = onAppend;
  }

  /**
   * Readers here follow the log (`following`), or no longer do. The word goes to the other
   * servers, which send log notifications (`announced`) only while some server's readers follow:
   * each NOTIFY costs PostgreSQL a transaction and its notification queue lock, which slowed a
   * drain when nobody read them (bench/RESULTS.md, "The measurements behind the code's choices").
   */
  logFollowed(following: boolean): void {
    if (following === this.followedHere) return;
    this.followedHere = following;
    if (this.followersTimer !== null) clearInterval(this.followersTimer);
    this.followersTimer = null;
    if (!following || this.ctx.closing) return;
    this.noticeFollowers();
    this.followersTimer = setInterval(() => this.noticeFollowers(), FOLLOWERS_NOTICE_TTL_MS / 3);
    this.followersTimer.unref();
  }

  /** Say that readers here follow the log. */
  private noticeFollowers(): void {
    this.ctx.pool
      .query('SELECT pg_notify($1, $2)', [this.ctx.schema.channel, followersPayload(this.ctx.origin, false)])
      .catch((error: unknown) =>
        this.ctx.logger.debug({ err: (error as Error).message }, 'followers notification failed'),
      );
  }

  /**
   * Tell the other servers that `records` (committed) appended to the log, so their watchers look
   * again, while some server's readers follow it (`logFollowed`); returns `records`. One
   * notification at a time, and the next no sooner than
   * `LOG_NOTICE_GAP_MS` after it: writes committed meanwhile share it. Each NOTIFY is a
   * transaction that takes PostgreSQL's notification queue lock at commit; one per round trip
   * slowed the drain (bench/RESULTS.md, "The measurements behind the code's choices"). Enqueues need none: their statement's work
   * notification wakes the watchers too.
   */
  announced<T extends readonly JobRecord[]>(records: T): T {
    if (!this.ctx.logging || performance.now() >= this.followedElsewhereUntil || !records.some(logsTransition)) {
      return records;
    }
    if (this.announcing) {
      this.announceAgain = true;
      return records;
    }
    this.announcing = true;
    this.logNotices++;
    this.ctx.pool
      .query('SELECT pg_notify($1, $2)', [this.ctx.schema.channel, logNoticePayload(this.ctx.origin)])
      .catch((error: unknown) => this.ctx.logger.debug({ err: (error as Error).message }, 'log notification failed'))
      .finally(() => {
        const next = setTimeout(() => {
          this.announcing = false;
          if (!this.announceAgain || this.ctx.closing) return;
          this.announceAgain = false;
          this.announced(records);
        }, LOG_NOTICE_GAP_MS);
        next.unref();
      });
    return records;
  }

  /** Stop its timers and hand over the connection, for the caller to end: the store is closing. */
  detach(): pg.Client | null {
    if (this.followersTimer !== null) clearInterval(this.followersTimer);
    if (this.reconnectTimer !== null) clearTimeout(this.reconnectTimer);
    const listener = this.listener;
    this.listener = null;
    return listener;
  }
}
