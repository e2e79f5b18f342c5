/**
 * The overview's controls over kinds, each the engine call gRPC makes with the same permission
 * and scope rules: pause and resume a kind prefix (PauseKinds, ResumeKinds: a tenant in its own
 * scope, an operator in any or everywhere), set and clear a kind limit (operators only). Every
 * one needs the session's CSRF token. A refused input (a bad field, a bound reached, nothing of
 * that name) answers with the overview again, the message in the control's panel and the values
 * as typed; nothing was written.
 */
import type { FastifyInstance } from 'fastify';
import { pauseScope, principalLabel, requirePermission, resolveScope } from '../../edge/auth.ts';
import type { QueueScope } from '../../core/types.ts';
import type { HttpContext } from '../context.ts';
import { formPost } from '../form-post.ts';
import {
  formScope,
  formText,
  limitForm,
  LIMIT_FIELDS,
  tenantLimitForm,
  TENANT_LIMIT_FIELDS,
  typedValues,
  type Form,
} from '../forms.ts';
import { onlyKnown } from '../params.ts';
import type { Refusal } from '../views/controls.ts';
import type { Viewer } from '../views/layout.ts';
import { overviewPage } from '../views/overview.ts';
import { overviewData } from './overview.ts';

export function controlRoutes(app: FastifyInstance, context: HttpContext): void {
  const { queue, logger } = context;

  /** A control's route: the action, then back to its panel; a refusal shown in the panel. */
  const control = (path: string, panel: Refusal['panel'], act: (viewer: Viewer, form: Form) => Promise<void>): void =>
    formPost(
      app,
      context,
      path,
      async (viewer, form) => {
        await act(viewer, form);
        return `/#${panel}`;
      },
      async (viewer, form, message) =>
        overviewPage(viewer, {
          ...(await overviewData(context, viewer)),
          refused: { panel, message, values: typedValues(form) },
        }),
    );

  // Pause and resume: PauseKinds' and ResumeKinds' permission and scope rules.
  control('/pauses/pause', 'pauses', async (viewer, form) => {
    requirePermission(viewer.principal, 'pause');
    onlyKnown(form, ['_csrf', 'kind_prefix', 'scope']);
    const { requested, everywhere } = formScope(form);
    const scope = pauseScope(viewer.principal, requested, everywhere);
    const kindPrefix = formText(form, 'kind_prefix')?.trim() ?? '';
    await queue.pause({ kindPrefix, scope, by: principalLabel(viewer.principal) });
    logger.info({ kindPrefix, caller: viewer.principal.name }, 'paused kinds');
  });

  control('/pauses/resume', 'pauses', async (viewer, form) => {
    requirePermission(viewer.principal, 'pause');
    onlyKnown(form, ['_csrf', 'kind_prefix', 'scope']);
    const { requested, everywhere } = formScope(form);
    const scope = pauseScope(viewer.principal, requested, everywhere);
    const kindPrefix = formText(form, 'kind_prefix') ?? '';
    await queue.resume({ kindPrefix, scope });
    logger.info({ kindPrefix, caller: viewer.principal.name }, 'resumed kinds');
  });

  // Release a blocked ordered key: ReleaseKey's permission (`cancel`) and scope rules.
  control('/keys/release', 'keys', async (viewer, form) => {
    requirePermission(viewer.principal, 'cancel');
    onlyKnown(form, ['_csrf', 'order_key', 'scope']);
    const scope = resolveScope(viewer.principal, formScope(form).requested, false) as QueueScope;
    const orderKey = formText(form, 'order_key') ?? '';
    const next = await queue.releaseKey(scope, orderKey);
    logger.info({ orderKey, next: next?.jobId ?? null, caller: viewer.principal.name }, 'released order key');
  });

  // Kind limits are global: operators only (permission `limit`), as SetKindLimit and ClearKindLimit.
  control('/limits/set', 'limits', async (viewer, form) => {
    requirePermission(viewer.principal, 'limit');
    const limit = limitForm(form);
    await queue.setKindLimit({ ...limit, by: principalLabel(viewer.principal) });
    logger.info({ kindPrefix: limit.kindPrefix, caller: viewer.principal.name }, 'set kind limit');
  });

  control('/limits/clear', 'limits', async (viewer, form) => {
    requirePermission(viewer.principal, 'limit');
    onlyKnown(form, LIMIT_FIELDS);
    const kindPrefix = formText(form, 'kind_prefix') ?? '';
    await queue.clearKindLimit(kindPrefix);
    logger.info({ kindPrefix, caller: viewer.principal.name }, 'cleared kind limit');
  });

  // Tenant limits: operators only (permission `limit`), as SetTenantLimit and ClearTenantLimit.
  control('/tenant-limits/set', 'tenant-limits', async (viewer, form) => {
    requirePermission(viewer.principal, 'limit');
    const limit = tenantLimitForm(form);
    await queue.setTenantLimit({ ...limit, by: principalLabel(viewer.principal) });
    logger.info({ tenant: limit.tenant, caller: viewer.principal.name }, 'set tenant limit');
  });

  control('/tenant-limits/clear', 'tenant-limits', async (viewer, form) => {
    requirePermission(viewer.principal, 'limit');
    onlyKnown(form, TENANT_LIMIT_FIELDS);
    const tenant = formText(form, 'tenant') ?? '';
    await queue.clearTenantLimit(tenant);
    logger.info({ tenant, caller: viewer.principal.name }, 'cleared tenant limit');
  });
}
