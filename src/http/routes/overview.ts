/**
 * The overview: its page and its live stream (a sample and the counts on each
 * of telemetry's ticks). Its panels' controls post to `routes/controls.ts`.
 */
import type { FastifyInstance } from 'fastify';
import { hasPermission } from '../../edge/auth.ts';
import { Telemetry } from '../../telemetry/telemetry.ts';
import type { HttpContext } from '../context.ts';
import { onlyKnown } from '../params.ts';
import type { Viewer } from '../views/layout.ts';
import { overviewPage, type OverviewData } from '../views/overview.ts';

export function overviewRoutes(app: FastifyInstance, context: HttpContext): void {
  const { queue, telemetry, viewerOf, readScope, sendHtml, eventStream } = context;

  app.get('/', async (request, reply) => {
    onlyKnown(request.query as Record<string, unknown>, []);
    const viewer = viewerOf(request, reply, true);
    return sendHtml(reply, overviewPage(viewer, await overviewData(context, viewer)));
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
}

/** What the overview shows `viewer`: its counts, and the panels its role may read. */
export async function overviewData(context: HttpContext, viewer: Viewer): Promise<OverviewData> {
  const { queue, telemetry, readScope } = context;
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
  // Blocked ordered keys for those who may release them (ReleaseKey's permission), in the same scope.
  const blockedKeys = hasPermission(viewer.principal, 'cancel') ? await queue.blockedKeys(scope) : null;
  const tenantLimits = viewer.principal.role === 'operator' ? await queue.tenantLimits() : null;
  return { counts, tenants, backend: queue.backend, pauses, limits, blockedKeys, tenantLimits };
}
