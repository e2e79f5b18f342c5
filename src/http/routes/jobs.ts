/**
 * Jobs: the list, a job's page and its raw values, a job's live stream of
 * transitions, and the actions on jobs, each the engine call gRPC makes with
 * the same permission and scope.
 */
import { once } from 'node:events';
import type { FastifyInstance } from 'fastify';
import { ErrorCode, isTelhaError, TelhaError } from '../../core/errors.ts';
import { effectiveMaxAttempts } from '../../core/transitions.ts';
import { transitionOf } from '../../core/transitions-log.ts';
import { JOB_STATE_NAMES } from '../../core/types.ts';
import { principalLabel, requirePermission } from '../../edge/auth.ts';
import { describeError } from '../../edge/status.ts';
import { countDead, listJobs, retryDead } from '../browse.ts';
import type { HttpContext } from '../context.ts';
import { html } from '../html.ts';
import {
  FILTER_PARAMS,
  onlyKnown,
  parseFilter,
  parseJobId,
  parseList,
  parseRawValue,
  type JobFilter,
} from '../params.ts';
import { notice } from '../views/layout.ts';
import { bulkDonePage, confirmRetryPage, jobNotFoundPage, jobPage, jobsPage } from '../views/jobs.ts';

/** Transitions a job page's stream reads at a time: one job's come a few at once. */
const JOB_EVENTS_PER_PAGE = 100;

export function jobRoutes(app: FastifyInstance, context: HttpContext): void {
  const { queue, logger, viewerOf, actor, readScope, sendHtml, eventStream, shutdown } = context;

  // A filter the server refuses (a bad value, a page token of another store) answers 400 with the
  // page and the message where the rows go: the filter form swaps that in (app.js), so the operator
  // reads why instead of looking at the old rows.
  app.get('/jobs', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    const query = request.query as Record<string, unknown>;
    try {
      const params = parseList(query);
      const scope = readScope(viewer.principal, params.tenant);
      const result = await listJobs(queue, scope, params);
      return sendHtml(reply, jobsPage(viewer, { params, result }, queue.clock.now()));
    } catch (error) {
      if (!isTelhaError(error, ErrorCode.InvalidArgument)) throw error;
      const values = Object.fromEntries(
        FILTER_PARAMS.flatMap((name) => (typeof query[name] === 'string' ? [[name, query[name]]] : [])),
      );
      return sendHtml(reply, jobsPage(viewer, { refused: error.message, values }, queue.clock.now()), 400);
    }
  });

  // The job-id box: the job's page, or a message. Another tenant's job reads exactly as a missing
  // one (the scope makes it not found), so a tenant learns nothing of it.
  app.get('/jobs/find', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    const query = request.query as Record<string, unknown>;
    onlyKnown(query, ['id']);
    const given = typeof query['id'] === 'string' ? query['id'].trim() : '';
    let jobId: string;
    try {
      jobId = parseJobId(given);
    } catch {
      const message = `"${given.slice(0, 64)}" is not a job id: a job id is a UUID like 0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.`;
      return sendHtml(reply, jobNotFoundPage(viewer, given, message), 400);
    }
    try {
      await queue.show(jobId, readScope(viewer.principal, null));
    } catch (error) {
      if (!isTelhaError(error, ErrorCode.NotFound)) throw error;
      return sendHtml(reply, jobNotFoundPage(viewer, given, `No job ${jobId} here.`), 404);
    }
    return reply.redirect(`/jobs/${jobId}`, 303);
  });

  app.get('/jobs/retry-dead', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    const query = request.query as Record<string, unknown>;
    onlyKnown(query, FILTER_PARAMS);
    const filter = parseFilter(query);
    requirePermission(viewer.principal, 'retry');
    const count = await countDead(queue, readScope(viewer.principal, filter.tenant), filter);
    return sendHtml(reply, confirmRetryPage(viewer, filter, count));
  });

  app.get<{ Params: { id: string } }>('/jobs/:id', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    const query = request.query as Record<string, unknown>;
    onlyKnown(query, ['retried', 'cancelled', 'discarded', 'run_now']);
    const jobId = parseJobId(request.params.id);
    // The log's head before the read: the page follows the job from there, so a transition that
    // commits between the read and the page's stream opening is shown, not lost.
    const liveFrom = queue.feed.enabled ? await queue.feed.head() : null;
    const job = await queue.show(jobId, readScope(viewer.principal, null));
    const message =
      query['retried'] !== undefined
        ? notice('ok', html`Retried: the job is Pending again.`)
        : query['cancelled'] !== undefined
          ? notice('ok', html`Cancelled: the job will not run again unless an operator retries it.`)
          : query['discarded'] !== undefined
            ? notice('ok', html`Discarded: the job is Cancelled; its record stays until retention prunes it.`)
            : query['run_now'] !== undefined
              ? notice('ok', html`Ready now: the next worker free for its kind takes it.`)
              : null;
    return sendHtml(
      reply,
      jobPage(viewer, job, {
        now: queue.clock.now(),
        effectiveMaxAttempts: effectiveMaxAttempts(job, { config: queue.config.jobs }),
        message,
        liveFrom,
      }),
    );
  });

  // A value's raw bytes, as a download: the page shows only the first part of a long or deep one.
  app.get<{ Params: { id: string; value: string } }>('/jobs/:id/raw/:value', async (request, reply) => {
    const viewer = viewerOf(request, reply, true);
    onlyKnown(request.query as Record<string, unknown>, []);
    const jobId = parseJobId(request.params.id);
    const name = parseRawValue(request.params.value);
    const job = await queue.show(jobId, readScope(viewer.principal, null));
    const value = job[name];
    if (value === null) throw new TelhaError(ErrorCode.NotFound, `job ${jobId} has no ${name}`);
    // Progress is JSON text; the rest are bytes only the producer knows the meaning of.
    const [type, extension] =
      name === 'progress' ? ['application/json; charset=utf-8', 'json'] : ['application/octet-stream', 'bin'];
    return reply
      .type(type)
      .header('cache-control', 'no-store')
      .header('content-disposition', `attachment; filename="${jobId}.${name}.${extension}"`)
      .send(typeof value === 'string' ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength));
  });

  app.post<{ Params: { id: string } }>('/jobs/:id/retry', async (request, reply) => {
    const viewer = actor(request, reply);
    onlyKnown(request.body as Record<string, unknown>, ['_csrf']);
    const jobId = parseJobId(request.params.id);
    requirePermission(viewer.principal, 'retry');
    const job = await queue.retry(jobId, readScope(viewer.principal, null));
    logger.info({ jobId, kind: job.kind, tenant: job.tenant, operator: viewer.principal.name }, 'operator retry');
    return reply.redirect(`/jobs/${jobId}?retried=1`, 303);
  });

  app.post<{ Params: { id: string } }>('/jobs/:id/cancel', async (request, reply) => {
    const viewer = actor(request, reply);
    onlyKnown(request.body as Record<string, unknown>, ['_csrf']);
    const jobId = parseJobId(request.params.id);
    requirePermission(viewer.principal, 'cancel');
    const job = await queue.cancel(jobId, { by: principalLabel(viewer.principal) }, readScope(viewer.principal, null));
    logger.info({ jobId, kind: job.kind, tenant: job.tenant, caller: viewer.principal.name }, 'cancelled');
    return reply.redirect(`/jobs/${jobId}?cancelled=1`, 303);
  });

  app.post<{ Params: { id: string } }>('/jobs/:id/discard', async (request, reply) => {
    const viewer = actor(request, reply);
    onlyKnown(request.body as Record<string, unknown>, ['_csrf']);
    const jobId = parseJobId(request.params.id);
    requirePermission(viewer.principal, 'cancel');
    const job = await queue.discard(jobId, { by: principalLabel(viewer.principal) }, readScope(viewer.principal, null));
    logger.info({ jobId, kind: job.kind, tenant: job.tenant, caller: viewer.principal.name }, 'discarded');
    return reply.redirect(`/jobs/${jobId}?discarded=1`, 303);
  });

  app.post<{ Params: { id: string } }>('/jobs/:id/run-now', async (request, reply) => {
    const viewer = actor(request, reply);
    onlyKnown(request.body as Record<string, unknown>, ['_csrf']);
    const jobId = parseJobId(request.params.id);
    requirePermission(viewer.principal, 'enqueue');
    const job = await queue.runNow(jobId, { by: principalLabel(viewer.principal) }, readScope(viewer.principal, null));
    logger.info({ jobId, kind: job.kind, tenant: job.tenant, caller: viewer.principal.name }, 'run now');
    return reply.redirect(`/jobs/${jobId}?run_now=1`, 303);
  });

  app.post('/jobs/retry-dead', async (request, reply) => {
    const viewer = actor(request, reply);
    const body = request.body as Record<string, unknown>;
    onlyKnown(body, ['_csrf', ...FILTER_PARAMS]);
    const filter: JobFilter = parseFilter(body);
    requirePermission(viewer.principal, 'retry');
    const result = await retryDead(queue, readScope(viewer.principal, filter.tenant), filter);
    logger.info(
      { ...result, kind: filter.kind, tenant: filter.tenant, operator: viewer.principal.name },
      'operator retry of dead jobs',
    );
    return sendHtml(reply, bulkDonePage(viewer, filter, result));
  });

  // A job page's stream: its transitions, read from the transitions log as they commit (what Watch
  // reads), from the position the page was rendered at, or the last one the browser saw when it
  // reconnects. The page fetches itself again on each; an idle job costs a parked reader, no poll.
  app.get<{ Params: { id: string } }>('/jobs/:id/events', async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    onlyKnown(query, ['from']);
    const viewer = viewerOf(request, reply, false);
    const jobId = parseJobId(request.params.id);
    const scope = readScope(viewer.principal, null);
    const resumeFrom = request.headers['last-event-id'] ?? query['from'];
    // Outside the viewer's scope reads as not found, as the page does.
    await queue.show(jobId, scope);
    const from = typeof resumeFrom === 'string' && resumeFrom !== '' ? resumeFrom : await queue.feed.head();
    const stop = new AbortController();
    const onShutdown = (): void => stop.abort();
    shutdown.addEventListener('abort', onShutdown, { once: true });
    const pages = queue.feed.follow(from, JOB_EVENTS_PER_PAGE, { scope, kindPrefix: '', jobId }, stop.signal);
    try {
      // The first read checks the position (another store's, malformed, past retention): a bad one
      // is refused before the stream opens.
      let next = await pages.next();
      const stream = eventStream(reply);
      stream.gone.addEventListener('abort', onShutdown, { once: true });
      try {
        while (!next.done && !stream.gone.aborted) {
          for (const { job, position } of next.value.entries) {
            const { transition, at } = transitionOf(job);
            if (!stream.send('transition', { transition, state: JOB_STATE_NAMES[job.state], at }, position)) {
              await once(stream.res, 'drain', { signal: stream.gone }).catch(() => undefined);
            }
          }
          next = await pages.next();
        }
      } catch (error) {
        // After the stream opened a failure (the store gone) can only end it; the browser reconnects.
        describeError(error, logger, { http: 'GET /jobs/:id/events' });
      } finally {
        stream.res.end();
      }
    } finally {
      shutdown.removeEventListener('abort', onShutdown);
      stop.abort();
      await pages.return(undefined);
    }
  });
}
