/** The operators' controls over kinds: pauses (permission `pause`) and kind limits (`limit`). */
import { pauseScope, principalLabel, resolveScope } from '../../edge/auth.ts';
import { kindLimitToWire, pauseToWire, scopeFromWire } from '../convert.ts';
import type { HandlerKit, QueueServiceImpl } from './kit.ts';

type ControlMethod = 'pauseKinds' | 'resumeKinds' | 'listPauses' | 'setKindLimit' | 'clearKindLimit' | 'listKindLimits';

export function controlHandlers(kit: HandlerKit): Pick<QueueServiceImpl, ControlMethod> {
  const { queue, logger, handle } = kit;
  return {
    // A pause holds back a kind prefix in a tenant's own scope, or (operators) any scope or everywhere.
    pauseKinds: handle('pauseKinds', 'pause', async (req, { principal }) => {
      const scope = pauseScope(principal, scopeFromWire(req.scope), req.everywhere);
      const pause = await queue.pause({ kindPrefix: req.kindPrefix, scope, by: principalLabel(principal) });
      logger.info({ kindPrefix: pause.kindPrefix, caller: principal.name }, 'paused kinds');
      return { pause: pauseToWire(pause) };
    }),

    resumeKinds: handle('resumeKinds', 'pause', async (req, { principal }) => {
      const scope = pauseScope(principal, scopeFromWire(req.scope), req.everywhere);
      await queue.resume({ kindPrefix: req.kindPrefix, scope });
      logger.info({ kindPrefix: req.kindPrefix, caller: principal.name }, 'resumed kinds');
      return {};
    }),

    listPauses: handle('listPauses', 'pause', async (req, { principal }) => {
      const pauses = await queue.pauses(resolveScope(principal, scopeFromWire(req.scope), true));
      return { pauses: pauses.map(pauseToWire) };
    }),

    // Kind limits are global: operators only (permission `limit`).
    setKindLimit: handle('setKindLimit', 'limit', async (req, { principal }) => {
      const limit = await queue.setKindLimit({
        kindPrefix: req.kindPrefix,
        concurrency: req.concurrency ?? null,
        rate: req.rate ?? null,
        by: principalLabel(principal),
      });
      logger.info({ kindPrefix: limit.kindPrefix, caller: principal.name }, 'set kind limit');
      return { limit: kindLimitToWire(limit) };
    }),

    clearKindLimit: handle('clearKindLimit', 'limit', async (req, { principal }) => {
      await queue.clearKindLimit(req.kindPrefix);
      logger.info({ kindPrefix: req.kindPrefix, caller: principal.name }, 'cleared kind limit');
      return {};
    }),

    listKindLimits: handle('listKindLimits', 'limit', async () => {
      const limits = await queue.kindLimits();
      return { limits: limits.map(kindLimitToWire) };
    }),
  };
}
