/** `/metrics`: Prometheus text, for an operator's token (the figures span every tenant). */
import type { FastifyInstance } from 'fastify';
import { ErrorCode, TelhaError } from '../../core/errors.ts';
import type { HttpContext } from '../context.ts';

export function metricsRoutes(app: FastifyInstance, { auth, telemetry }: HttpContext): void {
  app.get('/metrics', async (request, reply) => {
    const metrics = telemetry.metrics;
    if (metrics === null) return reply.code(404).type('text/plain').send('metrics.enabled is false\n');
    const principal = auth.authenticate(request.headers.authorization ?? null);
    if (principal.role !== 'operator') {
      throw new TelhaError(ErrorCode.PermissionDenied, 'metrics span every tenant: they need an operator token');
    }
    return reply.type(metrics.contentType).send(await metrics.text());
  });
}
