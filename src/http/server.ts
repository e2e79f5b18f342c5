/**
 * The HTTP listener of `telha serve`, with Fastify: `/healthz`, `/readyz`,
 * `/metrics` and the dashboard. It calls the engine directly, like the gRPC
 * handlers, and authorizes with the same tokens, roles and scope rules
 * (`edge/auth.ts`), so a token means here exactly what it means on gRPC.
 *
 *     GET  /healthz /readyz /metrics            probes and Prometheus
 *     GET  /login  POST /login  POST /logout    sessions (with tokens configured)
 *     GET  /  /jobs  /jobs/:id  /leases  /schedules  pages
 *     GET  /jobs/:id/raw/:value                  a job's payload, continuation, progress or result, to download
 *     GET  /events  /jobs/:id/events            live streams (server-sent events): the overview's,
 *                                               and a job's transitions from the transitions log
 *     POST /jobs/:id/retry  /jobs/:id/cancel  /jobs/retry-dead
 *                                               actions (CSRF token required)
 */
import { createServer as createHttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyCookie from '@fastify/cookie';
import fastifyHelmet from '@fastify/helmet';
import fastifyStatic from '@fastify/static';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import type { TelhaConfig } from '../core/config.ts';
import { ErrorCode, TelhaError } from '../core/errors.ts';
import { effectiveMaxAttempts } from '../core/transitions.ts';
import type { Logger } from '../core/logger.ts';
import { transitionOf } from '../core/transitions-log.ts';
import { JOB_STATE_NAMES, SYSTEM_SCOPE, type ScopeFilter } from '../core/types.ts';
import type { Queue } from '../engine/queue.ts';
import { assertLoopbackWhenOpen, joinAddress, splitAddress } from '../edge/address.ts';
import { MAX_LIST_LIMIT } from '../core/bounds.ts';
import {
  OPEN_ACCESS,
  principalLabel,
  pauseScope,
  requirePermission,
  resolveScope,
  type Authenticator,
  type Principal,
} from '../edge/auth.ts';
import { describeError } from '../edge/status.ts';
import { countDead, listJobs, retryDead } from './browse.ts';
import { html, type Html } from './html.ts';
import {
  FILTER_PARAMS,
  onlyKnown,
  parseFilter,
  parseJobId,
  parseList,
  parseRawValue,
  parseWorker,
  type JobFilter,
} from './params.ts';
import { csrfMatches, Sessions, SESSION_IDLE_MS } from './sessions.ts';
import { Telemetry } from '../telemetry/telemetry.ts';
import { LoginThrottle, MAX_THROTTLED_ADDRESSES } from './throttle.ts';
import { errorPage, notice, type Viewer } from './views/layout.ts';
import { bulkDonePage, confirmRetryPage, jobPage, jobsPage } from './views/jobs.ts';
import { leasesPage } from './views/leases.ts';
import { schedulesPage } from './views/schedules.ts';
import { loginPage } from './views/login.ts';
import { overviewPage } from './views/overview.ts';

export const SESSION_COOKIE = 'telha_session';
/** Leases the leases page shows at most (the engine's own cap on one read). */
const MAX_LEASES_SHOWN = 1_000;

const require = createRequire(import.meta.url);
const ASSETS = fileURLToPath(new URL('./assets/', import.meta.url));
/** Files served under `/assets/`: ours, and the two libraries the pages load, from node_modules (no CDN). */
const ASSET_FILES: Readonly<Record<string, string>> = {
  'app.js': ASSETS,
  'app.css': ASSETS,
  'htmx.min.js': dirname(require.resolve('htmx.org/dist/htmx.min.js')),
  'uPlot.iife.min.js': dirname(require.resolve('uplot/dist/uPlot.iife.min.js')),
  'uPlot.min.css': dirname(require.resolve('uplot/dist/uPlot.min.css')),
};

export interface RunningHttp {
  /** `host:port` actually bound. */
  readonly address: string;
  readonly port: number;
  close(): Promise<void>;
}

export interface HttpOptions {
  readonly queue: Queue;
  readonly config: TelhaConfig;
  readonly logger: Logger;
  readonly auth: Authenticator;
  readonly telemetry: Telemetry;
}

/** One server-sent event stream on a hijacked response. */
interface EventStream {
  readonly res: ServerResponse;
  /** Aborts when the browser goes away or the server closes the stream. */
  readonly gone: AbortSignal;
  /** Write one event (`id` is what the browser sends back as Last-Event-ID); `false` when the socket is full. */
  send(this: void, event: string, data: unknown, id?: string): boolean;
}

/** Transitions a job page's stream reads at a time: one job's come a few at once. */
const JOB_EVENTS_PER_PAGE = 100;

/** A request the session or CSRF check turned away; the handler wrote nothing. */
class Refused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function startHttpServer(options: HttpOptions): Promise<RunningHttp> {
  const { queue, config, logger, auth, telemetry } = options;
  const address = config.server.http_address;
  assertLoopbackWhenOpen(auth.open, 'server.http_address', address);
  const { host, port } = splitAddress(address);
  const { tls_cert_file: certFile, tls_key_file: keyFile } = config.server;
  const tls = certFile !== undefined && keyFile !== undefined;
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
  /** Aborted as the server closes: ends every stream's reading of the transitions log. */
  const shutdown = new AbortController();

  const app = Fastify({
    logger: false,
    // Query strings as fast-querystring reads them: a repeated name becomes an array, which the params refuse.
    serverFactory: (handler) =>
      tls
        ? createHttpsServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, handler)
        : createHttpServer(handler),
    bodyLimit: 64 * 1024,
  });
  await app.register(fastifyCookie);
  await app.register(fastifyHelmet, {
    // Everything the pages load comes from this origin; no inline script or style, no eval, no framing.
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'none'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
    frameguard: { action: 'deny' },
    // Not helmet's no-referrer: under it a browser sends `Origin: null` with its own form posts,
    // which the origin check must refuse. Same-origin keeps URLs (job ids, filters) from other sites.
    referrerPolicy: { policy: 'same-origin' },
    // A loopback dashboard on plain HTTP must not be told to upgrade: there is no HTTPS to upgrade to.
    strictTransportSecurity: tls,
  });
  await app.register(fastifyStatic, { root: ASSETS, serve: false });
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request: FastifyRequest, body: string | Buffer, done: (error: Error | null, value?: unknown) => void) =>
      done(null, Object.fromEntries(new URLSearchParams(body.toString()))),
  );

  const cookieOptions = { httpOnly: true, sameSite: 'strict' as const, path: '/', secure: tls };

  /**
   * Who is asking. With no tokens configured every caller is an operator, and
   * gets a session anyway, for its CSRF token. With tokens, no session means:
   * pages send the browser to the login page, anything else is refused.
   */
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
    return { principal: session.principal, csrf: session.csrf, canLogout: !auth.open };
  }

  /** A state-changing request: a session, a same-origin browser, and the session's CSRF token in the form. */
  function actor(request: FastifyRequest, reply: FastifyReply): Viewer {
    checkOrigin(request);
    const viewer = viewerOf(request, reply, false);
    const body = (request.body ?? {}) as Record<string, unknown>;
    if (!csrfMatches(viewer, body['_csrf'])) {
      throw new Refused(403, 'missing or wrong CSRF token: reload the page and try again');
    }
    return viewer;
  }

  /** The scope a read runs in: a tenant's own, or (operators) the tenant filtered on, or every scope. */
  function readScope(principal: Principal, tenant: string | null): ScopeFilter {
    requirePermission(principal, 'read');
    return resolveScope(principal, tenant === null ? null : { tenant }, true);
  }

  const sendHtml = (reply: FastifyReply, body: Html, status = 200): FastifyReply =>
    reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(body.text);

  app.setErrorHandler((error: unknown, request, reply) => {
    if (error instanceof Refused) {
      if (error.status === 303) return reply.redirect(error.message, 303);
      return request.method === 'GET' && acceptsHtml(request)
        ? sendHtml(reply, errorPage(null, error.status, error.message), error.status)
        : reply.code(error.status).type('text/plain; charset=utf-8').send(error.message);
    }
    const statusCode = (error as { statusCode?: unknown }).statusCode;
    if (!(error instanceof TelhaError) && typeof statusCode === 'number' && statusCode < 500) {
      // Fastify's own: a body too large, a malformed form.
      return reply
        .code(statusCode)
        .type('text/plain; charset=utf-8')
        .send((error as Error).message);
    }
    const status = describeError(error, logger, { http: `${request.method} ${request.routeOptions.url ?? ''}` });
    const session = sessions.get(request.cookies[SESSION_COOKIE]);
    const viewer =
      session === null ? null : { principal: session.principal, csrf: session.csrf, canLogout: !auth.open };
    return acceptsHtml(request)
      ? sendHtml(reply, errorPage(viewer, status.http, status.message), status.http)
      : reply.code(status.http).type('text/plain; charset=utf-8').send(status.message);
  });
  app.setNotFoundHandler((request, reply) =>
    acceptsHtml(request)
      ? sendHtml(reply, errorPage(null, 404, `no page at ${request.url.split('?')[0] ?? ''}`), 404)
      : reply.code(404).type('text/plain; charset=utf-8').send('not found'),
  );

  // ---- probes and metrics ----

  // Browsers ask for it on every page; there is none.
  app.get('/favicon.ico', (_request, reply) => reply.code(204).send());

  app.get('/healthz', (_request, reply) => reply.type('text/plain; charset=utf-8').send('ok\n'));

  app.get('/readyz', async (_request, reply) => {
    try {
      // Open and reachable: a count of the system scope is in memory on RocksDB and one small query on
      // PostgreSQL. Write stalls come from the store's figures, at most metrics.refresh_ms old; a full
      // disk from the store's health at once, with its reason.
      await queue.health();
      await queue.counts(SYSTEM_SCOPE);
      const figures = await telemetry.storeMetrics();
      if (figures.writeStopped === true) return reply.code(503).type('text/plain').send('not ready: writes stopped\n');
      return reply.type('text/plain; charset=utf-8').send('ready\n');
    } catch (error) {
      const message = error instanceof TelhaError ? error.message : 'the store is unreachable';
      logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'readiness check failed');
      return reply.code(503).type('text/plain; charset=utf-8').send(`not ready: ${message}\n`);
    }
  });

  app.get('/metrics', async (request, reply) => {
    const metrics = telemetry.metrics;
    if (metrics === null) return reply.code(404).type('text/plain').send('metrics.enabled is false\n');
    const principal = auth.authenticate(request.headers.authorization ?? null);
    if (principal.role !== 'operator') {
      throw new TelhaError(ErrorCode.PermissionDenied, 'metrics span every tenant: they need an operator token');
    }
    return reply.type(metrics.contentType).send(await metrics.text());
  });

  // ---- assets ----

  app.get<{ Params: { file: string } }>('/assets/:file', (request, reply) => {
    const dir = ASSET_FILES[request.params.file];
    if (dir === undefined) return reply.callNotFound();
    return reply.header('cache-control', 'public, max-age=3600').sendFile(request.params.file, dir);
  });

  // ---- sessions ----

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

  // ---- pages ----

  app.get('/', async (request, reply) => {
    onlyKnown(request.query as Record<string, unknown>, []);
    const viewer = viewerOf(request, reply, true);
    const scope = readScope(viewer.principal, null);
    // A page view reads the counts now; the per-tenant rows, one read each, come from the cache.
    const counts = await queue.counts(scope);
    const tenants =
      viewer.principal.role === 'tenant'
        ? null
        : await Promise.all(
            telemetry.tenants().map(async (tenant) => ({ tenant, counts: await telemetry.counts.tenant(tenant) })),
          );
    // Pauses for those who may read them (ListPauses' permission), in the same scope.
    const pauses = viewer.principal.role === 'worker' ? null : await queue.pauses(scope);
    // Limits are global and set by operators: only they see them.
    const limits = viewer.principal.role === 'operator' ? await queue.kindLimits() : null;
    return sendHtml(reply, overviewPage(viewer, { counts, tenants, backend: queue.backend, pauses, limits }));
  });

  app.get('/jobs', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    const params = parseList(request.query as Record<string, unknown>);
    const scope = readScope(viewer.principal, params.tenant);
    const result = await listJobs(queue, scope, params);
    return sendHtml(reply, jobsPage(viewer, params, result, queue.clock.now()));
  });

  app.get('/jobs/retry-dead', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    const query = request.query as Record<string, unknown>;
    onlyKnown(query, FILTER_PARAMS);
    const filter = parseFilter(query);
    requirePermission(viewer.principal, 'retry');
    const count = await countDead(queue, readScope(viewer.principal, filter.tenant), filter);
    return sendHtml(reply, confirmRetryPage(viewer, filter, count));
  });

  app.get<{ Params: { id: string } }>('/jobs/:id', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    const query = request.query as Record<string, unknown>;
    onlyKnown(query, ['retried', 'cancelled']);
    const jobId = parseJobId(request.params.id);
    // The log's head before the read: the page follows the job from there, so a transition that
    // commits between the read and the page's stream opening is shown, not lost.
    const liveFrom = queue.feed.enabled ? await queue.feed.head() : null;
    const job = await queue.show(jobId, readScope(viewer.principal, null));
    const message =
      query['retried'] !== undefined
        ? notice('ok', html`Retried: the job is Pending again.`)
        : query['cancelled'] !== undefined
          ? notice('ok', html`Cancelled: the job will not run again unless an operator retries it.`)
          : null;
    return sendHtml(
      reply,
      jobPage(viewer, job, {
        now: queue.clock.now(),
        effectiveMaxAttempts: effectiveMaxAttempts(job, { config: queue.config.jobs }),
        message,
        liveFrom,
      }),
    );
  });

  // A value's raw bytes, as a download: the page shows only the first part of a long or deep one.
  app.get<{ Params: { id: string; value: string } }>('/jobs/:id/raw/:value', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    onlyKnown(request.query as Record<string, unknown>, []);
    const jobId = parseJobId(request.params.id);
    const name = parseRawValue(request.params.value);
    const job = await queue.show(jobId, readScope(viewer.principal, null));
    const value = job[name];
    if (value === null) throw new TelhaError(ErrorCode.NotFound, `job ${jobId} has no ${name}`);
    // Progress is JSON text; the rest are bytes only the producer knows the meaning of.
    const [type, extension] =
      name === 'progress' ? ['application/json; charset=utf-8', 'json'] : ['application/octet-stream', 'bin'];
    return reply
      .type(type)
      .header('cache-control', 'no-store')
      .header('content-disposition', `attachment; filename="${jobId}.${name}.${extension}"`)
      .send(typeof value === 'string' ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength));
  });

  app.get('/leases', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    const worker = parseWorker(request.query as Record<string, unknown>);
    const scope = readScope(viewer.principal, null);
    const jobs = await queue.leased({
      scope,
      limit: MAX_LEASES_SHOWN,
      ...(worker === null ? {} : { workerId: worker }),
    });
    return sendHtml(reply, leasesPage(viewer, jobs, worker, MAX_LEASES_SHOWN, queue.clock.now()));
  });

  app.get('/schedules', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    onlyKnown(request.query as Record<string, unknown>, []);
    // The permission ListSchedules needs, and the same scope: a tenant sees its own.
    requirePermission(viewer.principal, 'schedule');
    const scope = resolveScope(viewer.principal, null, true);
    const { schedules } = await queue.listSchedules({ scope, limit: MAX_LIST_LIMIT });
    return sendHtml(reply, schedulesPage(viewer, schedules, MAX_LIST_LIMIT, queue.clock.now()));
  });

  // ---- actions: each the engine call gRPC makes, with the same permission and scope ----

  // Resume from the overview's Paused panel: ResumeKinds' permission and scope rules.
  app.post('/pauses/resume', async (request, reply) => {
    const viewer = actor(request, reply);
    const body = request.body as Record<string, unknown>;
    onlyKnown(body, ['_csrf', 'kind_prefix', 'scope']);
    const where = typeof body['scope'] === 'string' ? body['scope'] : '';
    const requested =
      where === 'system' ? { system: true as const } : where.startsWith('tenant:') ? { tenant: where.slice(7) } : null;
    requirePermission(viewer.principal, 'pause');
    const scope = pauseScope(viewer.principal, requested, where === 'everywhere');
    const kindPrefix = typeof body['kind_prefix'] === 'string' ? body['kind_prefix'] : '';
    await queue.resume({ kindPrefix, scope });
    logger.info({ kindPrefix, caller: viewer.principal.name }, 'resumed kinds');
    return reply.redirect('/', 303);
  });

  app.post<{ Params: { id: string } }>('/jobs/:id/retry', async (request, reply) => {
    const viewer = actor(request, reply);
    onlyKnown(request.body as Record<string, unknown>, ['_csrf']);
    const jobId = parseJobId(request.params.id);
    requirePermission(viewer.principal, 'retry');
    const job = await queue.retry(jobId, readScope(viewer.principal, null));
    logger.info({ jobId, kind: job.kind, tenant: job.tenant, operator: viewer.principal.name }, 'operator retry');
    return reply.redirect(`/jobs/${jobId}?retried=1`, 303);
  });

  app.post<{ Params: { id: string } }>('/jobs/:id/cancel', async (request, reply) => {
    const viewer = actor(request, reply);
    onlyKnown(request.body as Record<string, unknown>, ['_csrf']);
    const jobId = parseJobId(request.params.id);
    requirePermission(viewer.principal, 'cancel');
    const job = await queue.cancel(jobId, { by: principalLabel(viewer.principal) }, readScope(viewer.principal, null));
    logger.info({ jobId, kind: job.kind, tenant: job.tenant, caller: viewer.principal.name }, 'cancelled');
    return reply.redirect(`/jobs/${jobId}?cancelled=1`, 303);
  });

  app.post('/jobs/retry-dead', async (request, reply) => {
    const viewer = actor(request, reply);
    const body = request.body as Record<string, unknown>;
    onlyKnown(body, ['_csrf', ...FILTER_PARAMS]);
    const filter: JobFilter = parseFilter(body);
    requirePermission(viewer.principal, 'retry');
    const result = await retryDead(queue, readScope(viewer.principal, filter.tenant), filter);
    logger.info(
      { ...result, kind: filter.kind, tenant: filter.tenant, operator: viewer.principal.name },
      'operator retry of dead jobs',
    );
    return sendHtml(reply, bulkDonePage(viewer, filter, result));
  });

  // ---- live streams (server-sent events) ----

  /** Take over the response as an event stream; it ends with the server. */
  const eventStream = (reply: FastifyReply): EventStream => {
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
        return res.write(`event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`);
      },
    };
  };

  // A job page's stream: its transitions, read from the transitions log as they commit (what Watch
  // reads), from the position the page was rendered at, or the last one the browser saw when it
  // reconnects. The page fetches itself again on each; an idle job costs a parked reader, no poll.
  app.get<{ Params: { id: string } }>('/jobs/:id/events', async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    onlyKnown(query, ['from']);
    const viewer = viewerOf(request, reply, false);
    const jobId = parseJobId(request.params.id);
    const scope = readScope(viewer.principal, null);
    const resumeFrom = request.headers['last-event-id'] ?? query['from'];
    // Outside the viewer's scope reads as not found, as the page does.
    await queue.show(jobId, scope);
    const from = typeof resumeFrom === 'string' && resumeFrom !== '' ? resumeFrom : await queue.feed.head();
    const stop = new AbortController();
    const onShutdown = (): void => stop.abort();
    shutdown.signal.addEventListener('abort', onShutdown, { once: true });
    const pages = queue.feed.follow(from, JOB_EVENTS_PER_PAGE, { scope, kindPrefix: '', jobId }, stop.signal);
    try {
      // The first read checks the position (another store's, malformed, past retention): a bad one
      // is refused before the stream opens.
      let next = await pages.next();
      const stream = eventStream(reply);
      stream.gone.addEventListener('abort', onShutdown, { once: true });
      try {
        while (!next.done && !stream.gone.aborted) {
          for (const { job, position } of next.value.entries) {
            const { transition, at } = transitionOf(job);
            if (!stream.send('transition', { transition, state: JOB_STATE_NAMES[job.state], at }, position)) {
              await once(stream.res, 'drain', { signal: stream.gone }).catch(() => undefined);
            }
          }
          next = await pages.next();
        }
      } catch (error) {
        // After the stream opened a failure (the store gone) can only end it; the browser reconnects.
        describeError(error, logger, { http: 'GET /jobs/:id/events' });
      } finally {
        stream.res.end();
      }
    } finally {
      shutdown.signal.removeEventListener('abort', onShutdown);
      stop.abort();
      await pages.return(undefined);
    }
  });

  app.get('/events', async (request, reply) => {
    onlyKnown(request.query as Record<string, unknown>, []);
    const viewer = viewerOf(request, reply, false);
    const scope = readScope(viewer.principal, null);
    const tenant = scope.type === 'tenant' ? scope.tenant : null;
    const first = await queue.counts(scope);
    const { res, send } = eventStream(reply);
    send('snapshot', { history: telemetry.samples.history(tenant), counts: Telemetry.byStateNames(first) });
    const unsubscribe = telemetry.onSample((queueWide) => {
      const sample = tenant === null ? queueWide : telemetry.samples.latest(tenant);
      telemetry.counts.get(scope).then(
        (counts) => send('sample', { sample, counts: Telemetry.byStateNames(counts) }),
        () => undefined,
      );
    });
    res.on('close', unsubscribe);
  });

  app.addHook('preClose', (done) => {
    shutdown.abort();
    for (const res of streams) res.end();
    done();
  });

  await app.listen({ host, port });
  const bound = (app.server.address() as { port: number }).port;
  const where = joinAddress(host, bound);
  logger.info({ address: where, tls }, auth.open ? 'dashboard on loopback without tokens' : 'dashboard listening');
  let closing: Promise<void> | null = null;
  return {
    address: where,
    port: bound,
    close() {
      closing ??= app.close();
      return closing;
    },
  };
}

function acceptsHtml(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/html');
}

/**
 * A browser says where a request comes from; one from another site is
 * refused before the session is even looked at (defence in depth beside
 * SameSite=Strict and the CSRF token, and the only guard the login form has).
 */
function checkOrigin(request: FastifyRequest): void {
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
