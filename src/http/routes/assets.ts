/** `/assets/:file`: the pages' script and styles, and the two libraries they load, from node_modules (no CDN). */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

const require = createRequire(import.meta.url);
export const ASSETS = fileURLToPath(new URL('../assets/', import.meta.url));
/** Files served under `/assets/`, each from its folder. */
const ASSET_FILES: Readonly<Record<string, string>> = {
  'app.js': ASSETS,
  'app.css': ASSETS,
  'htmx.min.js': dirname(require.resolve('htmx.org/dist/htmx.min.js')),
  'uPlot.iife.min.js': dirname(require.resolve('uplot/dist/uPlot.iife.min.js')),
  'uPlot.min.css': dirname(require.resolve('uplot/dist/uPlot.min.css')),
};

export function assetRoutes(app: FastifyInstance): void {
  app.get<{ Params: { file: string } }>('/assets/:file', (request, reply) => {
    const dir = ASSET_FILES[request.params.file];
    if (dir === undefined) return reply.callNotFound();
    return reply.header('cache-control', 'public, max-age=3600').sendFile(request.params.file, dir);
  });
}
