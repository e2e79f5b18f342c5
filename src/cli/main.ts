#!/usr/bin/env node
/** The `telha` executable. */
import { main } from './program.ts';

// grpc-js names an IP address as the TLS server name, and Node warns DEP0123 about it on every
// `--tls` call to an address such as 127.0.0.1; the CLI cannot change it, so it prints every
// other warning as Node would and not that one.
process.removeAllListeners('warning');
process.on('warning', (warning: Error & { code?: string }) => {
  if (warning.code !== 'DEP0123') process.stderr.write(`(node:${process.pid}) ${String(warning)}\n`);
});

process.exitCode = await main(process.argv.slice(2));
