/** The Schedules page: ListSchedules' permission and scope (a tenant sees its own). */
import type { FastifyInstance } from 'fastify';
import { MAX_LIST_LIMIT } from '../../core/bounds.ts';
import { requirePermission, resolveScope } from '../../edge/auth.ts';
import type { HttpContext } from '../context.ts';
import { onlyKnown } from '../params.ts';
import { schedulesPage } from '../views/schedules.ts';

export function scheduleRoutes(app: FastifyInstance, { queue, viewerOf, sendHtml }: HttpContext): void {
  app.get('/schedules', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    onlyKnown(request.query as Record<string, unknown>, []);
    requirePermission(viewer.principal, 'schedule');
    const scope = resolveScope(viewer.principal, null, true);
    const { schedules } = await queue.listSchedules({ scope, limit: MAX_LIST_LIMIT });
    return sendHtml(reply, schedulesPage(viewer, schedules, MAX_LIST_LIMIT, queue.clock.now()));
  });
}
