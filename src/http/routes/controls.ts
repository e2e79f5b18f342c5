/**
 * The overview's controls over kinds, each the engine call gRPC makes with the same permission
 * and scope rules: pause and resume a kind prefix (PauseKinds, ResumeKinds: a tenant in its own
 * scope, an operator in any or everywhere), set and clear a kind limit (operators only). Every
 * one needs the session's CSRF token. A refused input (a bad field, a bound reached, nothing of
 * that name) answers with the overview again, the message in the control's panel and the values
 * as typed; nothing was written.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ErrorCode, TelhaError } from '../../core/errors.ts';
import { pauseScope, principalLabel, requirePermission } from '../../edge/auth.ts';
import { describeError } from '../../edge/status.ts';
import type { HttpContext } from '../context.ts';
import type { Html } from '../html.ts';
import { formScope, formText, limitForm, LIMIT_FIELDS, type Form } from '../forms.ts';
import { onlyKnown } from '../params.ts';
import type { Refusal } from '../views/controls.ts';
import type { Viewer } from '../views/layout.ts';
import { overviewPage } from '../views/overview.ts';
import { overviewData } from './overview.ts';

/** Refusals a form's author can act on: shown beside the form. Anything else is an error page. */
const SHOWN_IN_FORM: ReadonlySet<ErrorCode> = new Set([
  ErrorCode.InvalidArgument,
  ErrorCode.FailedPrecondition,
  ErrorCode.NotFound,
]);

/** The typed values of a form, to show again (never the CSRF token). */
function typedValues(form: Form): Record<string, string> {
  return Object.fromEntries(
    Object.entries(form).flatMap(([name, value]) =>
      name !== '_csrf' && typeof value === 'string' ? [[name, value]] : [],
    ),
  );
}

/**
 * Run a form's action; on a refusal its author can act on, answer `render(message)` with the
 * refusal's status instead of the error page.
 */
export async function inForm(
  context: HttpContext,
  reply: FastifyReply,
  action: () => Promise<FastifyReply>,
  render: (message: string) => Promise<Html>,
): Promise<FastifyReply> {
  try {
    return await action();
  } catch (error) {
    if (!(error instanceof TelhaError) || !SHOWN_IN_FORM.has(error.code)) throw error;
    const status = describeError(error, context.logger, {});
    return context.sendHtml(reply, await render(status.message), status.http);
  }
}

export function controlRoutes(app: FastifyInstance, context: HttpContext): void {
  const { queue, logger, actor } = context;

  const refusedOverview = async (viewer: Viewer, refused: Refusal) =>
    overviewPage(viewer, { ...(await overviewData(context, viewer)), refused });

  /** A control's route: the actor, its form checked, the action, and a refusal shown in `panel`. */
  const control = (path: string, panel: Refusal['panel'], act: (viewer: Viewer, form: Form) => Promise<void>): void => {
    app.post(path, async (request, reply) => {
      const viewer = actor(request, reply);
      const form = (request.body ?? {}) as Form;
      return inForm(
        context,
        reply,
        async () => {
          await act(viewer, form);
          return reply.redirect(`/#${panel}`, 303);
        },
        (message) => refusedOverview(viewer, { panel, message, values: typedValues(form) }),
      );
    });
  };

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
}
