/**
 * The HTTP listener of `telha serve`, with Fastify: `/healthz`, `/readyz`,
 * `/metrics` and the dashboard. It calls the engine directly, like the gRPC
 * handlers, and authorizes with the same tokens, roles and scope rules
 * (`edge/auth.ts`), so a token means here exactly what it means on gRPC.
 * This file only wires: the security headers, the one error handler, and one
 * set of routes per area (`routes/*.ts`), which share an `HttpContext`.
 *
 *     GET  /healthz /readyz                      routes/probes.ts
 *     GET  /metrics                              routes/metrics.ts
 *     GET  /assets/:file                         routes/assets.ts
 *     GET  /login  POST /login  POST /logout     routes/login.ts (sessions, with tokens configured)
 *     GET  /  /events                            routes/overview.ts (page, live stream)
 *     POST /pauses/pause  /pauses/resume  /limits/set  /limits/clear
 *                                                routes/controls.ts (the overview's panels' controls)
 *     GET  /jobs  /jobs/:id  /jobs/:id/raw/:value  /jobs/:id/events
 *     POST /jobs/:id/retry  /jobs/:id/cancel  /jobs/retry-dead
 *                                                routes/jobs.ts (actions need the CSRF token)
 *     GET  /leases                               routes/leases.ts
 *     GET  /schedules  /schedules/new  /schedules/edit
 *     POST /schedules/create  /schedules/update  /schedules/pause  /schedules/resume
 *          /schedules/run  /schedules/delete     routes/schedules.ts
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import fastifyCookie from '@fastify/cookie';
import fastifyHelmet from '@fastify/helmet';
import fastifyStatic from '@fastify/static';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { TelhaError } from '../core/errors.ts';
import { assertLoopbackWhenOpen, joinAddress, splitAddress } from '../edge/address.ts';
import { describeError } from '../edge/status.ts';
import { acceptsHtml, createHttpContext, Refused, type HttpContext, type HttpOptions } from './context.ts';
import { assetRoutes, ASSETS } from './routes/assets.ts';
import { controlRoutes } from './routes/controls.ts';
import { jobRoutes } from './routes/jobs.ts';
import { leaseRoutes } from './routes/leases.ts';
import { loginRoutes } from './routes/login.ts';
import { metricsRoutes } from './routes/metrics.ts';
import { overviewRoutes } from './routes/overview.ts';
import { probeRoutes } from './routes/probes.ts';
import { scheduleRoutes } from './routes/schedules.ts';
import { errorPage } from './views/layout.ts';

export { SESSION_COOKIE, type HttpOptions } from './context.ts';

export interface RunningHttp {
  /** `host:port` actually bound. */
  readonly address: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Each area's routes, registered in this order. */
const AREAS: readonly ((app: FastifyInstance, context: HttpContext) => void)[] = [
  probeRoutes,
  metricsRoutes,
  assetRoutes,
  loginRoutes,
  overviewRoutes,
  controlRoutes,
  jobRoutes,
  leaseRoutes,
  scheduleRoutes,
];

export async function startHttpServer(options: HttpOptions): Promise<RunningHttp> {
  const { config, logger, auth } = options;
  const address = config.server.http_address;
  assertLoopbackWhenOpen(auth.open, 'server.http_address', address);
  const { host, port } = splitAddress(address);
  const { tls_cert_file: certFile, tls_key_file: keyFile } = config.server;
  const tls = certFile !== undefined && keyFile !== undefined;
  const context = createHttpContext(options, tls);

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

  const { sendHtml } = context;
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
    return acceptsHtml(request)
      ? sendHtml(reply, errorPage(context.sessionViewer(request), status.http, status.message), status.http)
      : reply.code(status.http).type('text/plain; charset=utf-8').send(status.message);
  });
  app.setNotFoundHandler((request, reply) =>
    acceptsHtml(request)
      ? sendHtml(reply, errorPage(null, 404, `no page at ${request.url.split('?')[0] ?? ''}`), 404)
      : reply.code(404).type('text/plain; charset=utf-8').send('not found'),
  );

  for (const area of AREAS) area(app, context);

  app.addHook('preClose', (done) => {
    context.endStreams();
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
