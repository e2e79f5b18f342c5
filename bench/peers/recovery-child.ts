/**
 * The worker the recovery workload kills: attaches to the instance the
 * parent opened, takes one job, says so on stdout and never finishes it.
 * The parent SIGKILLs this process and times how long the job takes to start
 * running again in another worker.
 *
 * argv: <system id> <tier JSON> <environment JSON> <attach info JSON> <open options JSON>
 */
import { factory } from './registry.ts';
import type { Environment, OpenOptions, Tier } from './types.ts';

const [id, tierJson, envJson, infoJson, optionsJson] = process.argv.slice(2);
if (id === undefined || !tierJson || !envJson || !infoJson || !optionsJson) {
  console.error('usage: recovery-child <system id> <tier> <environment> <attach info> <open options>');
  process.exit(2);
}
const system = await factory(id).attach(
  JSON.parse(tierJson) as Tier,
  JSON.parse(envJson) as Environment,
  JSON.parse(infoJson) as Record<string, string>,
  JSON.parse(optionsJson) as OpenOptions,
);
await system.startWorkers(1, (tag) => {
  process.stdout.write(`started ${tag}\n`);
  // Hold the job until killed (the system keeps heartbeating it meanwhile, if it does): never complete it.
  return new Promise<void>(() => undefined);
});
// Stay alive even for a system whose worker holds no handle open while its only job hangs.
setInterval(() => undefined, 60_000);
