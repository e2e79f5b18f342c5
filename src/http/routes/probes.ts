/** The probes an orchestrator asks: `/healthz` (the process answers) and `/readyz` (the store does). */
import type { FastifyInstance } from 'fastify';
import { TelhaError } from '../../core/errors.ts';
import { SYSTEM_SCOPE } from '../../core/types.ts';
import type { HttpContext } from '../context.ts';

export function probeRoutes(app: FastifyInstance, { queue, logger, telemetry }: HttpContext): void {
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
}
