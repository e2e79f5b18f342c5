/**
 * Every system the comparative benchmark knows, by id, in the order the
 * tables list them (Telha first). Adding a system: one adapter file exporting
 * a SystemFactory, one line here.
 */
import { bullmq } from './bullmq.ts';
import { GRAPHILE_WORKER, graphileDefaults, graphileTuned } from './graphile-worker.ts';
import { PG_BOSS, pgBossDefaults, pgBossTuned } from './pg-boss.ts';
import type { InstalledPackage } from './releases.ts';
import { telhaEmbedded } from './telha-embedded.ts';
import { telhaServerPostgres, telhaServerRocks } from './telha-server.ts';
import type { SystemFactory } from './types.ts';

export const FACTORIES: Readonly<Record<string, SystemFactory>> = {
  'telha-embedded': telhaEmbedded,
  'telha-server': telhaServerRocks,
  'telha-server-pg': telhaServerPostgres,
  bullmq,
  'graphile-worker': graphileDefaults,
  'graphile-worker-tuned': graphileTuned,
  'pg-boss': pgBossDefaults,
  'pg-boss-tuned': pgBossTuned,
};

/** The peers with more than one release installed, and the one this run's Node uses (releases.ts). */
export const RELEASES: Readonly<Record<string, InstalledPackage>> = {
  'pg-boss': PG_BOSS,
  'graphile-worker': GRAPHILE_WORKER,
};

export function factory(id: string): SystemFactory {
  const found = FACTORIES[id];
  if (!found) throw new Error(`unknown system ${id}; known: ${Object.keys(FACTORIES).join(', ')}`);
  return found;
}
