/**
 * A control's POST route: who is acting (a session, same origin, the CSRF token), the action,
 * and where the browser goes after it. A refusal its author can act on (a bad field, a bound
 * reached, nothing of that name) answers with `render`'s page and the refusal's status, showing
 * the message beside what was typed; the action wrote nothing. Anything else (a permission, the
 * CSRF check) is the error page of the one error handler.
 */
import type { FastifyInstance } from 'fastify';
import { ErrorCode, TelhaError } from '../core/errors.ts';
import { describeError } from '../edge/status.ts';
import type { HttpContext } from './context.ts';
import type { Form } from './forms.ts';
import type { Html } from './html.ts';
import type { Viewer } from './views/layout.ts';

/** Refusals a form's author can act on: shown beside the form. */
const SHOWN_IN_FORM: ReadonlySet<ErrorCode> = new Set([
  ErrorCode.InvalidArgument,
  ErrorCode.FailedPrecondition,
  ErrorCode.NotFound,
]);

export function formPost(
  app: FastifyInstance,
  context: HttpContext,
  path: string,
  /** Does what the form asks; returns where the browser goes next. */
  act: (viewer: Viewer, form: Form) => Promise<string>,
  render: (viewer: Viewer, form: Form, message: string) => Html | Promise<Html>,
): void {
  app.post(path, async (request, reply) => {
    const viewer = context.actor(request, reply);
    const form = (request.body ?? {}) as Form;
    try {
      return reply.redirect(await act(viewer, form), 303);
    } catch (error) {
      if (!(error instanceof TelhaError) || !SHOWN_IN_FORM.has(error.code)) throw error;
      const status = describeError(error, context.logger, {});
      return context.sendHtml(reply, await render(viewer, form, status.message), status.http);
    }
  });
}
