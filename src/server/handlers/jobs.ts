/** Reading and steering jobs: show, list, counts (permission `read`), retry and cancel. */
import { principalLabel, resolveScope } from '../../edge/auth.ts';
import { listOrderFromWire, stateToWire } from '../../wire/states.ts';
import { scopeFromWire, stateFilterFromWire } from '../convert.ts';
import { optional, type HandlerKit, type QueueServiceImpl } from './kit.ts';
import type { QueueScope } from '../../core/types.ts';

type JobMethod =
  | 'show'
  | 'list'
  | 'counts'
  | 'retry'
  | 'cancel'
  | 'cancelMatching'
  | 'discard'
  | 'runNow'
  | 'listBlockedKeys'
  | 'releaseKey';

export function jobHandlers(kit: HandlerKit): Pick<QueueServiceImpl, JobMethod> {
  const { queue, logger, handle, toWire } = kit;
  return {
    show: handle('show', 'read', async (req, { principal }) => {
      const job = await queue.show(req.jobId, resolveScope(principal, null, true));
      return { job: toWire(job) };
    }),

    list: handle('list', 'read', async (req, { principal }) => {
      const page = await queue.list({
        scope: resolveScope(principal, scopeFromWire(req.scope), true),
        ...optional('state', stateFilterFromWire(req.state, 'state')),
        ...(req.kindPrefix === '' ? {} : { kindPrefix: req.kindPrefix }),
        ...(req.limit === 0 ? {} : { limit: req.limit }),
        ...(req.pageToken === '' ? {} : { pageToken: req.pageToken }),
        order: listOrderFromWire(req.order),
        ...(req.includeSystem ? { includeSystem: true } : {}),
      });
      return { jobs: page.jobs.map(toWire), nextPageToken: page.nextPageToken ?? '' };
    }),

    counts: handle('counts', 'read', async (req, { principal }) => {
      const rows = await queue.counts(resolveScope(principal, scopeFromWire(req.scope), true));
      return {
        rows: rows.map((r) => ({ state: stateToWire(r.state), kind: r.kind, count: BigInt(r.count) })),
      };
    }),

    retry: handle('retry', 'retry', async (req, { principal }) => {
      const job = await queue.retry(req.jobId, resolveScope(principal, null, true));
      logger.info({ jobId: job.jobId, kind: job.kind, tenant: job.tenant, operator: principal.name }, 'operator retry');
      return { job: toWire(job) };
    }),

    cancel: handle('cancel', 'cancel', async (req, { principal }) => {
      const job = await queue.cancel(
        req.jobId,
        { by: principalLabel(principal), ...(req.reason === undefined ? {} : { reason: req.reason }) },
        resolveScope(principal, null, true),
      );
      logger.info({ jobId: job.jobId, kind: job.kind, tenant: job.tenant, caller: principal.name }, 'cancelled');
      return { job: toWire(job) };
    }),

    cancelMatching: handle('cancelMatching', 'cancel', async (req, { principal }) => {
      const scope = resolveScope(principal, scopeFromWire(req.scope), true);
      const state = stateFilterFromWire(req.state, 'state');
      const cancelled = await queue.cancelMatching({
        scope,
        by: principalLabel(principal),
        ...(state === null ? {} : { states: [state] }),
        ...(req.kindPrefix === '' ? {} : { kindPrefix: req.kindPrefix }),
      });
      logger.info({ kindPrefix: req.kindPrefix, caller: principal.name, cancelled }, 'cancelled matching jobs');
      return { cancelled: BigInt(cancelled) };
    }),

    // Giving up on a Dead job is stopping it from outside, as a cancel is: the same callers.
    discard: handle('discard', 'cancel', async (req, { principal }) => {
      const job = await queue.discard(
        req.jobId,
        { by: principalLabel(principal), ...(req.reason === undefined ? {} : { reason: req.reason }) },
        resolveScope(principal, null, true),
      );
      logger.info({ jobId: job.jobId, kind: job.kind, tenant: job.tenant, caller: principal.name }, 'discarded');
      return { job: toWire(job) };
    }),

    // Running a job sooner is what its producer could have asked at enqueue: the same callers.
    runNow: handle('runNow', 'enqueue', async (req, { principal }) => {
      const job = await queue.runNow(req.jobId, { by: principalLabel(principal) }, resolveScope(principal, null, true));
      logger.info({ jobId: job.jobId, kind: job.kind, tenant: job.tenant, caller: principal.name }, 'run now');
      return { job: toWire(job) };
    }),

    listBlockedKeys: handle('listBlockedKeys', 'read', async (req, { principal }) => {
      const keys = await queue.blockedKeys(
        resolveScope(principal, scopeFromWire(req.scope), true),
        req.limit === 0 ? undefined : req.limit,
      );
      return {
        keys: keys.map((k) => ({
          tenant: k.tenant ?? '',
          orderKey: k.orderKey,
          ...(k.head === null ? {} : { head: toWire(k.head) }),
          waiting: BigInt(k.waiting),
        })),
      };
    }),

    // Releasing a blocked key gives up on its dead head's place, as a discard gives up on the job.
    releaseKey: handle('releaseKey', 'cancel', async (req, { principal }) => {
      const scope = resolveScope(principal, scopeFromWire(req.scope), false) as QueueScope;
      const next = await queue.releaseKey(scope, req.orderKey);
      logger.info({ orderKey: req.orderKey, next: next?.jobId ?? null, caller: principal.name }, 'released order key');
      return next === null ? {} : { next: toWire(next) };
    }),
  };
}
