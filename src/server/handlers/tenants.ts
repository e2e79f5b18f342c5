/** Tenant limits over gRPC (`core/tenant-limits.ts`): global, so operators only (permission `limit`). */
import { create } from '@bufbuild/protobuf';
import { formatRate } from '../../core/rate.ts';
import type { TenantLimit, TenantLimitStatus } from '../../core/tenant-limits.ts';
import { principalLabel } from '../../edge/auth.ts';
import { TenantLimitSchema, type TenantLimit as WireTenantLimit } from '../../gen/telha/v1/queue_pb.ts';
import type { HandlerKit, QueueServiceImpl } from './kit.ts';

type TenantMethod = 'setTenantLimit' | 'clearTenantLimit' | 'listTenantLimits';

export function tenantHandlers(kit: HandlerKit): Pick<QueueServiceImpl, TenantMethod> {
  const { queue, logger, handle } = kit;
  return {
    setTenantLimit: handle('setTenantLimit', 'limit', async (req, { principal }) => {
      const limit = await queue.setTenantLimit({
        tenant: req.tenant,
        concurrency: req.concurrency ?? null,
        rate: req.rate ?? null,
        ...(req.weight === undefined ? {} : { weight: req.weight }),
        by: principalLabel(principal),
      });
      logger.info({ tenant: limit.tenant, caller: principal.name }, 'set tenant limit');
      return { limit: tenantLimitToWire(limit) };
    }),

    clearTenantLimit: handle('clearTenantLimit', 'limit', async (req, { principal }) => {
      await queue.clearTenantLimit(req.tenant);
      logger.info({ tenant: req.tenant, caller: principal.name }, 'cleared tenant limit');
      return {};
    }),

    listTenantLimits: handle('listTenantLimits', 'limit', async () => {
      const limits = await queue.tenantLimits();
      return { limits: limits.map(tenantLimitToWire) };
    }),
  };
}

/** A tenant limit as the wire sends it: the rate in its canonical text, leased and tokens when known. */
export function tenantLimitToWire(limit: TenantLimit | TenantLimitStatus): WireTenantLimit {
  const status = 'leased' in limit ? limit : null;
  return create(TenantLimitSchema, {
    tenant: limit.tenant,
    ...(limit.concurrency === null ? {} : { concurrency: limit.concurrency }),
    ...(limit.rate === null ? {} : { rate: formatRate(limit.rate) }),
    weight: limit.weight,
    setAtUs: BigInt(limit.setAt),
    setBy: limit.by,
    leased: BigInt(status?.leased ?? 0),
    ...(status === null || status.tokens === null ? {} : { tokens: BigInt(status.tokens) }),
  });
}
