/**
 * Schedules: the page, the form that creates or edits one, and the controls of a row (run now,
 * pause, resume, delete). Each is the gRPC call's permission (`schedule`) and scope rule: a
 * tenant its own scope's, an operator any scope's it names. Every change needs the CSRF token;
 * a refused one answers with its form (or the list) and the message, and wrote nothing.
 */
import type { FastifyInstance } from 'fastify';
import { MAX_LIST_LIMIT } from '../../core/bounds.ts';
import { invalidArgument } from '../../core/errors.ts';
import type { QueueScope } from '../../core/types.ts';
import { requirePermission, resolveScope, writeScope, type Principal } from '../../edge/auth.ts';
import type { HttpContext } from '../context.ts';
import { formPost } from '../form-post.ts';
import { formScope, formText, newScheduleForm, scheduleChangesForm, typedValues, type Form } from '../forms.ts';
import { href } from '../html.ts';
import { onlyKnown, parseJobId } from '../params.ts';
import type { Viewer } from '../views/layout.ts';
import { notice } from '../views/layout.ts';
import { scheduleFormPage, scheduleValues } from '../views/schedule-form.ts';
import { SCHEDULE_DONE, scheduleDoneNotice, schedulesPage, type ScheduleDone } from '../views/schedules.ts';

/** The scope a schedule control names (`scope`: `system` or `tenant:<id>`), checked against who asks. */
function scheduleScope(principal: Principal, form: Form): QueueScope {
  requirePermission(principal, 'schedule');
  const { requested, everywhere } = formScope(form);
  if (everywhere) throw invalidArgument('scope', 'a schedule lives in one scope: system or tenant:<id>');
  return writeScope(resolveScope(principal, requested, false));
}

export function scheduleRoutes(app: FastifyInstance, context: HttpContext): void {
  const { queue, logger, telemetry, viewerOf, sendHtml } = context;

  /** The scopes an operator's form offers: the tenants the server knows, then the system scope. */
  const scopes = (viewer: Viewer): string[] =>
    viewer.principal.role === 'operator' ? [...telemetry.tenants().map((t) => `tenant:${t}`), 'system'] : [];

  const listPage = async (viewer: Viewer, message: Parameters<typeof schedulesPage>[2]['message']) => {
    const scope = resolveScope(viewer.principal, null, true);
    const { schedules } = await queue.listSchedules({ scope, limit: MAX_LIST_LIMIT });
    return schedulesPage(viewer, schedules, { limit: MAX_LIST_LIMIT, now: queue.clock.now(), message });
  };

  app.get('/schedules', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    const query = request.query as Form;
    onlyKnown(query, ['done', 'name', 'job']);
    requirePermission(viewer.principal, 'schedule');
    const done = formText(query, 'done');
    const name = formText(query, 'name') ?? '';
    const job = formText(query, 'job');
    let message = null;
    if (done !== null) {
      const found = SCHEDULE_DONE.find((d) => d === done);
      if (found === undefined) throw invalidArgument('done', `one of ${SCHEDULE_DONE.join(', ')}`);
      message = scheduleDoneNotice(found, name, job === null ? null : parseJobId(job));
    }
    return sendHtml(reply, await listPage(viewer, message));
  });

  app.get('/schedules/new', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    onlyKnown(request.query as Form, []);
    requirePermission(viewer.principal, 'schedule');
    return sendHtml(
      reply,
      scheduleFormPage(viewer, { editing: null, values: {}, scopes: scopes(viewer), refused: null }),
    );
  });

  app.get('/schedules/edit', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    const query = request.query as Form;
    onlyKnown(query, ['scope', 'name']);
    const scope = scheduleScope(viewer.principal, query);
    const schedule = await queue.getSchedule(formText(query, 'name') ?? '', scope);
    return sendHtml(
      reply,
      scheduleFormPage(viewer, {
        editing: schedule.name,
        values: scheduleValues(schedule),
        scopes: scopes(viewer),
        refused: null,
      }),
    );
  });

  const done = (what: ScheduleDone, name: string, job?: string): string =>
    href('/schedules', { done: what, name, job });

  const formRoute = (path: string, editing: boolean, act: (form: Form, scope: QueueScope) => Promise<string>): void =>
    formPost(
      app,
      context,
      path,
      (viewer, form) => act(form, scheduleScope(viewer.principal, form)),
      (viewer, form, refused) =>
        scheduleFormPage(viewer, {
          editing: editing ? (formText(form, 'name') ?? '') : null,
          values: typedValues(form),
          scopes: scopes(viewer),
          refused,
        }),
    );

  formRoute('/schedules/create', false, async (form, scope) => {
    const schedule = await queue.createSchedule(newScheduleForm(form), scope);
    logger.info({ schedule: schedule.name, scope }, 'created schedule');
    return done('created', schedule.name);
  });

  formRoute('/schedules/update', true, async (form, scope) => {
    const name = formText(form, 'name') ?? '';
    const current = await queue.getSchedule(name, scope);
    const schedule = await queue.updateSchedule(name, scheduleChangesForm(form, current), scope);
    logger.info({ schedule: schedule.name, scope }, 'updated schedule');
    return done('updated', schedule.name);
  });

  /** A row's control: which schedule, and what to do to it; a refusal shows above the list. */
  const rowRoute = (path: string, act: (name: string, scope: QueueScope) => Promise<string>): void =>
    formPost(
      app,
      context,
      path,
      (viewer, form) => {
        onlyKnown(form, ['_csrf', 'scope', 'name']);
        return act(formText(form, 'name') ?? '', scheduleScope(viewer.principal, form));
      },
      (viewer, _form, message) => listPage(viewer, notice('error', message)),
    );

  rowRoute('/schedules/run', async (name, scope) => {
    const { job } = await queue.runSchedule(name, scope);
    logger.info({ schedule: name, jobId: job.jobId, scope }, 'ran schedule now');
    return done('ran', name, job.jobId);
  });

  for (const [path, paused] of [
    ['/schedules/pause', true],
    ['/schedules/resume', false],
  ] as const) {
    rowRoute(path, async (name, scope) => {
      await queue.updateSchedule(name, { paused }, scope);
      logger.info({ schedule: name, scope }, paused ? 'paused schedule' : 'resumed schedule');
      return done(paused ? 'paused' : 'resumed', name);
    });
  }

  rowRoute('/schedules/delete', async (name, scope) => {
    await queue.deleteSchedule(name, scope);
    logger.info({ schedule: name, scope }, 'deleted schedule');
    return done('deleted', name);
  });
}
