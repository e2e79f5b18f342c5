/**
 * What every route of the HTTP listener shares: the engine and its
 * telemetry, the sessions, and the guards that say who is asking (a page, a
 * stream, an action) and in which scope it reads. One is made per listener by
 * `startHttpServer` and handed to each area's routes (`routes/*.ts`).
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TelhaConfig } from '../core/config.ts';
import type { Logger } from '../core/logger.ts';
import type { ScopeFilter } from '../core/types.ts';
import type { Queue } from '../engine/queue.ts';
import { OPEN_ACCESS, requirePermission, resolveScope, type Authenticator, type Principal } from '../edge/auth.ts';
import type { Telemetry } from '../telemetry/telemetry.ts';
import type { Html } from './html.ts';
import { csrfMatches, Sessions, SESSION_IDLE_MS } from './sessions.ts';
import { LoginThrottle, MAX_THROTTLED_ADDRESSES } from './throttle.ts';
import type { Viewer } from './views/layout.ts';

export const SESSION_COOKIE = 'telha_session';

export interface HttpOptions {
  readonly queue: Queue;
  readonly config: TelhaConfig;
  readonly logger: Logger;
  readonly auth: Authenticator;
  readonly telemetry: Telemetry;
}

/** One server-sent event stream on a hijacked response. */
export interface EventStream {
  readonly res: ServerResponse;
  /** Aborts when the browser goes away or the server closes the stream. */
  readonly gone: AbortSignal;
  /** Write one event (`id` is what the browser sends back as Last-Event-ID); `false` when the socket is full. */
  send(this: void, event: string, data: unknown, id?: string): boolean;
}

/** A request the session or CSRF check turned away; the handler wrote nothing. */
export class Refused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface HttpContext extends HttpOptions {
  readonly tls: boolean;
  readonly sessions: Sessions;
  readonly throttle: LoginThrottle;
  readonly cookieOptions: { httpOnly: true; sameSite: 'strict'; path: '/'; secure: boolean };
  /** Aborted as the server closes: ends every stream's reading of the transitions log. */
  readonly shutdown: AbortSignal;
  /**
   * Who is asking. With no tokens configured every caller is an operator, and
   * gets a session anyway, for its CSRF token. With tokens, no session means:
   * pages send the browser to the login page, anything else is refused.
   */
  viewerOf(this: void, request: FastifyRequest, reply: FastifyReply, page: boolean): Viewer;
  /** The viewer of a session the request carries, or null; never makes one (for error pages). */
  sessionViewer(this: void, request: FastifyRequest): Viewer | null;
  /** A state-changing request: a session, a same-origin browser, and the session's CSRF token in the form. */
  actor(this: void, request: FastifyRequest, reply: FastifyReply): Viewer;
  /** The scope a read runs in: a tenant's own, or (operators) the tenant filtered on, or every scope. */
  readScope(this: void, principal: Principal, tenant: string | null): ScopeFilter;
  sendHtml(this: void, reply: FastifyReply, body: Html, status?: number): FastifyReply;
  /** Take over the response as an event stream; it ends with the server. */
  eventStream(this: void, reply: FastifyReply): EventStream;
  /** End every open stream (the server is closing). */
  endStreams(this: void): void;
}

export function createHttpContext(options: HttpOptions, tls: boolean): HttpContext {
  const { queue, config, auth } = options;
  const nowMs = (): number => queue.clock.now() / 1000;
  const { http_max_sessions: maxSessions } = config.server;
  // Without tokens every caller is the one anonymous operator: its sessions are all of them.
  const perPrincipal = auth.open ? maxSessions : config.server.http_sessions_per_token;
  const sessions = new Sessions({ total: maxSessions, perPrincipal }, nowMs);
  const throttle = new LoginThrottle(
    {
      burst: config.server.http_failed_logins_burst,
      perMinute: config.server.http_failed_logins_per_minute,
      maxAddresses: MAX_THROTTLED_ADDRESSES,
    },
    nowMs,
  );
  const streams = new Set<ServerResponse>();
  const shutdown = new AbortController();
  const cookieOptions = { httpOnly: true, sameSite: 'strict', path: '/', secure: tls } as const;

  const viewerFrom = (principal: Principal, csrf: string): Viewer => ({ principal, csrf, canLogout: !auth.open });

  function viewerOf(request: FastifyRequest, reply: FastifyReply, page: boolean): Viewer {
    let session = sessions.get(request.cookies[SESSION_COOKIE]);
    if (session === null && auth.open) {
      session = sessions.create(OPEN_ACCESS);
      if (session === null) throw new Refused(503, 'too many dashboard sessions: try again later');
      reply.setCookie(SESSION_COOKIE, session.id, { ...cookieOptions, maxAge: SESSION_IDLE_MS / 1000 });
    }
    if (session === null) {
      if (page && request.method === 'GET') throw new Refused(303, '/login');
      throw new Refused(401, 'log in first: no session, or it expired');
    }
    return viewerFrom(session.principal, session.csrf);
  }

  return {
    ...options,
    tls,
    sessions,
    throttle,
    cookieOptions,
    shutdown: shutdown.signal,
    viewerOf,
    sessionViewer(request) {
      const session = sessions.get(request.cookies[SESSION_COOKIE]);
      return session === null ? null : viewerFrom(session.principal, session.csrf);
    },
    actor(request, reply) {
      checkOrigin(request);
      const viewer = viewerOf(request, reply, false);
      const body = (request.body ?? {}) as Record<string, unknown>;
      if (!csrfMatches(viewer, body['_csrf'])) {
        throw new Refused(403, 'missing or wrong CSRF token: reload the page and try again');
      }
      return viewer;
    },
    readScope(principal, tenant) {
      requirePermission(principal, 'read');
      return resolveScope(principal, tenant === null ? null : { tenant }, true);
    },
    sendHtml: (reply, body, status = 200) =>
      reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(body.text),
    eventStream(reply) {
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        connection: 'keep-alive',
      });
      // Headers now, not with the first event: the browser's stream is open (and says so) before anything happens.
      res.flushHeaders();
      streams.add(res);
      const gone = new AbortController();
      res.on('close', () => {
        streams.delete(res);
        gone.abort();
      });
      return {
        res,
        gone: gone.signal,
        send(event, data, id) {
          return res.write(
            `event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`,
          );
        },
      };
    },
    endStreams() {
      shutdown.abort();
      for (const res of streams) res.end();
    },
  };
}

export function acceptsHtml(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/html');
}

/**
 * A browser says where a request comes from; one from another site is
 * refused before the session is even looked at (defence in depth beside
 * SameSite=Strict and the CSRF token, and the only guard the login form has).
 */
export function checkOrigin(request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (origin === 'null') throw new Refused(403, 'a request from an opaque origin is refused');
  if (origin === undefined) {
    if (request.headers['sec-fetch-site'] === 'cross-site') throw new Refused(403, 'cross-site request refused');
    return;
  }
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    throw new Refused(403, 'bad Origin header');
  }
  if (host !== request.headers.host) throw new Refused(403, 'cross-site request refused');
}
