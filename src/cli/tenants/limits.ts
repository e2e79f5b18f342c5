/** `telha tenants limit set|clear|list`: per-tenant concurrency, rate and weight, everywhere (operators). */
import { formatRate } from '../../core/rate.ts';
import type { TenantLimitStatus } from '../../core/tenant-limits.ts';
import { formatTable } from '../format.ts';
import { printLine, UsageError, type CliIo, type OperatorClient } from '../io.ts';

export interface SetTenantLimitOptions {
  readonly tenant: string;
  readonly concurrency?: number;
  readonly rate?: string;
  readonly weight?: number;
  readonly json?: boolean;
}

export function tenantLimitJson(limit: TenantLimitStatus): Record<string, unknown> {
  return {
    tenant: limit.tenant,
    concurrency: limit.concurrency,
    rate: limit.rate === null ? null : formatRate(limit.rate),
    weight: limit.weight,
    leased: limit.leased,
    tokens: limit.tokens,
    setAt: new Date(Math.floor(limit.setAt / 1000)).toISOString(),
    by: limit.by,
  };
}

export function formatTenantLimits(limits: readonly TenantLimitStatus[]): string {
  if (limits.length === 0) return '(no tenant limits)';
  return formatTable([
    ['TENANT', 'WEIGHT', 'CONCURRENCY', 'LEASED', 'RATE', 'TOKENS', 'BY'],
    ...limits.map((l) => [
      l.tenant,
      String(l.weight),
      l.concurrency === null ? '-' : String(l.concurrency),
      String(l.leased),
      l.rate === null ? '-' : formatRate(l.rate),
      l.tokens === null ? '-' : String(l.tokens),
      l.by,
    ]),
  ]);
}

export async function setTenantLimit(
  options: SetTenantLimitOptions,
  client: OperatorClient,
  io: CliIo,
): Promise<number> {
  if (options.concurrency === undefined && options.rate === undefined && options.weight === undefined) {
    throw new UsageError('give --concurrency, --rate, --weight or more (or `telha tenants limit clear <tenant>`)');
  }
  const limit = await client.setTenantLimit(options.tenant, {
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.rate === undefined ? {} : { rate: options.rate }),
    ...(options.weight === undefined ? {} : { weight: options.weight }),
  });
  if (options.json) printLine(io.stdout, tenantLimitJson(limit));
  else printLine(io.stdout, `limited tenant ${limit.tenant}`);
  return 0;
}

export async function clearTenantLimit(tenant: string, client: OperatorClient, io: CliIo): Promise<number> {
  await client.clearTenantLimit(tenant);
  printLine(io.stdout, `cleared the limit of tenant ${tenant}`);
  return 0;
}

export async function listTenantLimits(
  options: { json?: boolean },
  client: OperatorClient,
  io: CliIo,
): Promise<number> {
  const limits = await client.tenantLimits();
  if (options.json) printLine(io.stdout, { limits: limits.map(tenantLimitJson) });
  else printLine(io.stdout, formatTenantLimits(limits));
  return 0;
}
