/** The Leases page: the jobs leased now, optionally one worker's. */
import type { FastifyInstance } from 'fastify';
import type { HttpContext } from '../context.ts';
import { parseWorker } from '../params.ts';
import { leasesPage } from '../views/leases.ts';

/** Leases the leases page shows at most (the engine's own cap on one read). */
const MAX_LEASES_SHOWN = 1_000;

export function leaseRoutes(app: FastifyInstance, { queue, viewerOf, readScope, sendHtml }: HttpContext): void {
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
}
