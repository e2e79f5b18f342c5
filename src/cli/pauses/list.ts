/** `telha pauses`: the paused kind prefixes, a scope's (and those everywhere) or every one. */
import type { Pause } from '../../core/pauses.ts';
import { scopeOf, type ScopeOptions } from '../args.ts';
import { printLine, type CliIo, type OperatorClient } from '../io.ts';
import { formatTable } from '../format.ts';

export interface ListPausesOptions extends ScopeOptions {
  readonly json?: boolean;
}

function scopeName(pause: Pause): string {
  if (pause.scope === 'everywhere') return '(everywhere)';
  return pause.scope.type === 'system' ? '(system)' : pause.scope.tenant;
}

export function pauseJson(pause: Pause): Record<string, unknown> {
  return {
    scope: scopeName(pause),
    kindPrefix: pause.kindPrefix,
    pausedAt: new Date(Math.floor(pause.pausedAt / 1000)).toISOString(),
    by: pause.by,
  };
}

export function formatPauses(pauses: readonly Pause[]): string {
  if (pauses.length === 0) return '(no pauses)';
  const rows = [
    ['SCOPE', 'KIND PREFIX', 'PAUSED AT', 'BY'],
    ...pauses.map((p) => {
      const json = pauseJson(p);
      return [String(json['scope']), p.kindPrefix, String(json['pausedAt']), p.by];
    }),
  ];
  return formatTable(rows);
}

export async function listPauses(options: ListPausesOptions, client: OperatorClient, io: CliIo): Promise<number> {
  const pauses = await client.pauses(scopeOf(options));
  if (options.json) printLine(io.stdout, { pauses: pauses.map(pauseJson) });
  else printLine(io.stdout, formatPauses(pauses));
  return 0;
}
