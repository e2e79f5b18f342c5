/** `telha limits set|clear|list`: per-kind concurrency and rate limits, everywhere (operators). */
import type { KindLimitStatus } from '../../core/kind-limits.ts';
import { formatRate } from '../../core/rate.ts';
import { printLine, UsageError, type CliIo, type OperatorClient } from '../io.ts';
import { formatTable } from '../format.ts';

export interface SetLimitOptions {
  readonly kindPrefix: string;
  readonly concurrency?: number;
  readonly rate?: string;
  readonly json?: boolean;
}

export function limitJson(limit: KindLimitStatus): Record<string, unknown> {
  return {
    kindPrefix: limit.kindPrefix,
    concurrency: limit.concurrency,
    rate: limit.rate === null ? null : formatRate(limit.rate),
    leased: limit.leased,
    tokens: limit.tokens,
    setAt: new Date(Math.floor(limit.setAt / 1000)).toISOString(),
    by: limit.by,
  };
}

export function formatLimits(limits: readonly KindLimitStatus[]): string {
  if (limits.length === 0) return '(no kind limits)';
  const rows = [
    ['KIND PREFIX', 'CONCURRENCY', 'LEASED', 'RATE', 'TOKENS', 'BY'],
    ...limits.map((l) => [
      l.kindPrefix,
      l.concurrency === null ? '-' : String(l.concurrency),
      String(l.leased),
      l.rate === null ? '-' : formatRate(l.rate),
      l.tokens === null ? '-' : String(l.tokens),
      l.by,
    ]),
  ];
  return formatTable(rows);
}

export async function setLimit(options: SetLimitOptions, client: OperatorClient, io: CliIo): Promise<number> {
  if (options.concurrency === undefined && options.rate === undefined) {
    throw new UsageError('give --concurrency, --rate or both (or `telha limits clear <prefix>`)');
  }
  const limit = await client.setKindLimit(options.kindPrefix, {
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.rate === undefined ? {} : { rate: options.rate }),
  });
  if (options.json) printLine(io.stdout, limitJson(limit));
  else printLine(io.stdout, `limited ${limit.kindPrefix}`);
  return 0;
}

export async function clearLimit(kindPrefix: string, client: OperatorClient, io: CliIo): Promise<number> {
  await client.clearKindLimit(kindPrefix);
  printLine(io.stdout, `cleared the limit of ${kindPrefix}`);
  return 0;
}

export async function listLimits(options: { json?: boolean }, client: OperatorClient, io: CliIo): Promise<number> {
  const limits = await client.kindLimits();
  if (options.json) printLine(io.stdout, { limits: limits.map(limitJson) });
  else printLine(io.stdout, formatLimits(limits));
  return 0;
}
