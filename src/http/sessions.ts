/**
 * Dashboard sessions, kept in this process's memory: the cookie carries only
 * a random session id, never the token, so a stolen cookie dies with the
 * session (idle expiry, logout, restart) and the token never leaves the
 * login form. Each session has its own CSRF token, which every POST must
 * echo (the synchronizer-token pattern).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../server/auth.ts';

export interface Session {
  readonly id: string;
  readonly principal: Principal;
  /** Echoed by every form as `_csrf`. */
  readonly csrf: string;
  expiresAt: number;
}

/** Sessions at most; past it the least recently used one is dropped (its user logs in again). */
export const MAX_SESSIONS = 10_000;
/** A session unused this long expires: 12 h. */
export const SESSION_IDLE_MS = 12 * 3_600_000;

function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export class Sessions {
  // A Map keeps insertion order; touching a session re-inserts it, so the first entry is the least recently used.
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly nowMs: () => number) {}

  create(principal: Principal): Session {
    if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
    const session: Session = {
      id: newSecret(),
      principal,
      csrf: newSecret(),
      expiresAt: this.nowMs() + SESSION_IDLE_MS,
    };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session with this id, its idle expiry pushed out; `null` for an unknown or expired id. */
  get(id: string | undefined): Session | null {
    if (id === undefined) return null;
    const session = this.sessions.get(id);
    if (session === undefined) return null;
    this.sessions.delete(id);
    if (session.expiresAt <= this.nowMs()) return null;
    session.expiresAt = this.nowMs() + SESSION_IDLE_MS;
    this.sessions.set(id, session);
    return session;
  }

  delete(id: string): void {
    this.sessions.delete(id);
  }

  get size(): number {
    return this.sessions.size;
  }
}

/** Whether `presented` is the session's CSRF token, compared in constant time. */
export function csrfMatches(session: Pick<Session, 'csrf'>, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(session.csrf);
  return a.length === b.length && timingSafeEqual(a, b);
}
