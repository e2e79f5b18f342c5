/**
 * Dashboard sessions, kept in this process's memory: the cookie carries only
 * a random session id, never the token, so a stolen cookie dies with the
 * session (idle expiry, logout, restart) and the token never leaves the
 * login form. Each session has its own CSRF token, which every POST must
 * echo (the synchronizer-token pattern).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../edge/auth.ts';

export interface Session {
  readonly id: string;
  readonly principal: Principal;
  /** Echoed by every form as `_csrf`. */
  readonly csrf: string;
  expiresAt: number;
}

/** A session unused this long expires: 12 h. */
export const SESSION_IDLE_MS = 12 * 3_600_000;

export interface SessionLimits {
  /** Sessions at most, every principal's together (`server.http_max_sessions`). */
  readonly total: number;
  /** Sessions one principal holds at most (`server.http_sessions_per_token`). */
  readonly perPrincipal: number;
}

function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The live sessions, each principal's in its own least-recently-used order. A principal is one
 * configured token (or, without tokens, the one anonymous operator, whose limit is the total).
 */
export class Sessions {
  // A Map keeps insertion order; touching a session re-inserts it, so the first entry is the least
  // recently used: of every session in `all`, of one principal's in `byPrincipal`.
  private readonly all = new Map<string, Session>();
  private readonly byPrincipal = new Map<Principal, Map<string, Session>>();

  constructor(
    private readonly limits: SessionLimits,
    private readonly nowMs: () => number,
  ) {}

  /**
   * A new session for `principal`, ending its own least recently used one when it holds its
   * limit; `null` when every session is taken (by live sessions of others).
   */
  create(principal: Principal): Session | null {
    this.dropExpired();
    const own = this.byPrincipal.get(principal);
    if (own !== undefined && own.size >= this.limits.perPrincipal) {
      this.delete(own.keys().next().value as string);
    } else if (this.all.size >= this.limits.total) {
      return null;
    }
    const session: Session = {
      id: newSecret(),
      principal,
      csrf: newSecret(),
      expiresAt: this.nowMs() + SESSION_IDLE_MS,
    };
    this.insert(session);
    return session;
  }

  /** The live session with this id, its idle expiry pushed out; `null` for an unknown or expired id. */
  get(id: string | undefined): Session | null {
    if (id === undefined) return null;
    const session = this.all.get(id);
    if (session === undefined) return null;
    this.delete(id);
    if (session.expiresAt <= this.nowMs()) return null;
    session.expiresAt = this.nowMs() + SESSION_IDLE_MS;
    this.insert(session);
    return session;
  }

  delete(id: string): void {
    const session = this.all.get(id);
    if (session === undefined) return;
    this.all.delete(id);
    const own = this.byPrincipal.get(session.principal);
    own?.delete(id);
    if (own?.size === 0) this.byPrincipal.delete(session.principal);
  }

  get size(): number {
    return this.all.size;
  }

  /** Add `session` as the most recently used, of all and of its principal's. */
  private insert(session: Session): void {
    this.all.set(session.id, session);
    const own = this.byPrincipal.get(session.principal);
    if (own === undefined) this.byPrincipal.set(session.principal, new Map([[session.id, session]]));
    else own.set(session.id, session);
  }

  /** Expired sessions hold no place: the least recently used come first, and expire first. */
  private dropExpired(): void {
    const now = this.nowMs();
    for (const [id, session] of this.all) {
      if (session.expiresAt > now) return;
      this.delete(id);
    }
  }
}

/** Whether `presented` is the session's CSRF token, compared in constant time. */
export function csrfMatches(session: Pick<Session, 'csrf'>, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(session.csrf);
  return a.length === b.length && timingSafeEqual(a, b);
}
