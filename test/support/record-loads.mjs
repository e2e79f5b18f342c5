// Preloaded with --import: prints every module URL this process resolves, one per line on
// stderr, prefixed "load:", so a test can see exactly what importing an entry loads.
// Written to file descriptor 2 directly and synchronously: the hooks run on a thread
// of their own, whose process.stderr is forwarded to the main thread and may be lost when the
// process exits right after its import (the client entry's test failed once so in CI).
import { register } from 'node:module';

register(
  'data:text/javascript,' +
    encodeURIComponent(`
      import { writeSync } from 'node:fs';
      export async function resolve(specifier, context, next) {
        const result = await next(specifier, context);
        writeSync(2, 'load:' + result.url + '\\n');
        return result;
      }
    `),
);
