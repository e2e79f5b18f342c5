/**
 * Sessions: the login page, logging in with a token (throttled per address
 * before the token is looked at) and logging out. Without tokens configured
 * there is nothing to log in to: every caller is the one operator.
 */
import type { FastifyInstance } from 'fastify';
import { ErrorCode, TelhaError } from '../../core/errors.ts';
import { requirePermission, type Principal } from '../../edge/auth.ts';
import { checkOrigin, SESSION_COOKIE, type HttpContext } from '../context.ts';
import { onlyKnown } from '../params.ts';
import { SESSION_IDLE_MS } from '../sessions.ts';
import { loginPage } from '../views/login.ts';

export function loginRoutes(app: FastifyInstance, context: HttpContext): void {
  const { auth, logger, telemetry, sessions, throttle, cookieOptions, sendHtml, actor } = context;

  app.get('/login', (request, reply) => {
    onlyKnown(request.query as Record<string, unknown>, []);
    if (auth.open) return reply.redirect('/', 303);
    return sendHtml(reply, loginPage(null));
  });

  app.post('/login', (request, reply) => {
    checkOrigin(request);
    if (auth.open) return reply.redirect('/', 303);
    // Throttled before the token is looked at: a right one would otherwise tell a guesser so.
    const address = request.socket.remoteAddress ?? '';
    const wait = throttle.retryAfterSecs(address);
    if (wait !== null) {
      telemetry.loginRefused('throttled');
      logger.debug({ address }, 'dashboard login throttled');
      reply.header('retry-after', String(wait));
      return sendHtml(reply, loginPage(`Too many failed logins from this address: try again in ${wait} s.`), 429);
    }
    const token = ((request.body ?? {}) as Record<string, unknown>)['token'];
    let principal: Principal;
    try {
      principal = auth.authenticate(typeof token === 'string' ? `Bearer ${token}` : null);
      requirePermission(principal, 'read');
    } catch (error) {
      const denied = error instanceof TelhaError && error.code === ErrorCode.PermissionDenied;
      // A worker's token is a right token, not a guess: only unknown ones spend the address's tries.
      if (!denied) throttle.failed(address);
      telemetry.loginRefused(denied ? 'not_allowed' : 'bad_token');
      logger.info({ denied, address }, 'dashboard login refused');
      return sendHtml(
        reply,
        loginPage(denied ? 'A worker token may not use the dashboard.' : 'Unknown token.'),
        denied ? 403 : 401,
      );
    }
    const old = request.cookies[SESSION_COOKIE];
    if (old !== undefined) sessions.delete(old);
    const session = sessions.create(principal);
    if (session === null) {
      telemetry.loginRefused('sessions_full');
      logger.warn(
        { caller: principal.name, sessions: sessions.size },
        'dashboard login refused: every session is taken',
      );
      return sendHtml(reply, loginPage('Too many dashboard sessions: try again later.'), 503);
    }
    logger.info({ caller: principal.name, tenant: principal.tenant }, 'dashboard login');
    reply.setCookie(SESSION_COOKIE, session.id, { ...cookieOptions, maxAge: SESSION_IDLE_MS / 1000 });
    return reply.redirect('/', 303);
  });

  app.post('/logout', (request, reply) => {
    actor(request, reply);
    const id = request.cookies[SESSION_COOKIE];
    if (id !== undefined) sessions.delete(id);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/login', 303);
  });
}
