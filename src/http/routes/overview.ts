/**
 * The overview: its page, its live stream (a sample and the counts on each
 * of telemetry's ticks) and the Resume control of its Paused panel.
 */
import type { FastifyInstance } from 'fastify';
import { pauseScope, requirePermission } from '../../edge/auth.ts';
import { Telemetry } from '../../telemetry/telemetry.ts';
import type { HttpContext } from '../context.ts';
import { onlyKnown } from '../params.ts';
import { overviewPage } from '../views/overview.ts';

export function overviewRoutes(app: FastifyInstance, context: HttpContext): void {
  const { queue, logger, telemetry, viewerOf, actor, readScope, sendHtml, eventStream } = context;

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
}
