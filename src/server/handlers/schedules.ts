/** Schedules (permission `schedule`): each lives in one scope, a tenant's own or the one an operator names. */
import { resolveScope, writeScope } from '../../edge/auth.ts';
import { newScheduleFromWire, scheduleChangesFromWire, scheduleToWire, scopeFromWire } from '../convert.ts';
import type { HandlerKit, QueueServiceImpl } from './kit.ts';

type ScheduleMethod =
  'createSchedule' | 'updateSchedule' | 'getSchedule' | 'listSchedules' | 'deleteSchedule' | 'runSchedule';

export function scheduleHandlers(kit: HandlerKit): Pick<QueueServiceImpl, ScheduleMethod> {
  const { queue, handle, resultToWire } = kit;
  return {
    createSchedule: handle('createSchedule', 'schedule', async (req, { principal }) => {
      const scope = writeScope(resolveScope(principal, scopeFromWire(req.schedule?.scope), false));
      return { schedule: scheduleToWire(await queue.createSchedule(newScheduleFromWire(req.schedule), scope)) };
    }),

    updateSchedule: handle('updateSchedule', 'schedule', async (req, { principal }) => {
      const scope = writeScope(resolveScope(principal, scopeFromWire(req.scope), false));
      return {
        schedule: scheduleToWire(await queue.updateSchedule(req.name, scheduleChangesFromWire(req), scope)),
      };
    }),

    getSchedule: handle('getSchedule', 'schedule', async (req, { principal }) => {
      const scope = writeScope(resolveScope(principal, scopeFromWire(req.scope), false));
      return { schedule: scheduleToWire(await queue.getSchedule(req.name, scope)) };
    }),

    listSchedules: handle('listSchedules', 'schedule', async (req, { principal }) => {
      const page = await queue.listSchedules({
        scope: resolveScope(principal, scopeFromWire(req.scope), true),
        ...(req.limit === 0 ? {} : { limit: req.limit }),
        ...(req.pageToken === '' ? {} : { pageToken: req.pageToken }),
      });
      return { schedules: page.schedules.map(scheduleToWire), nextPageToken: page.nextPageToken ?? '' };
    }),

    deleteSchedule: handle('deleteSchedule', 'schedule', async (req, { principal }) => {
      await queue.deleteSchedule(req.name, writeScope(resolveScope(principal, scopeFromWire(req.scope), false)));
      return {};
    }),

    runSchedule: handle('runSchedule', 'schedule', async (req, { principal }) => {
      const scope = writeScope(resolveScope(principal, scopeFromWire(req.scope), false));
      const { job, created } = resultToWire(await queue.runSchedule(req.name, scope));
      return { job, created };
    }),
  };
}
