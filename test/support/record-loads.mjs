// Preloaded with --import: prints every module URL this process resolves, one per line on
// stderr, prefixed "load:", so a test can see exactly what importing an entry loads.
import { register } from 'node:module';

register(
  'data:text/javascript,' +
    encodeURIComponent(`
      export async function resolve(specifier, context, next) {
        const result = await next(specifier, context);
        process.stderr.write('load:' + result.url + '\\n');
        return result;
      }
    `),
);
