/** Backups (permission `backup`): a consistent copy of the running store, written on the server's machine. */
import { isAbsolute } from 'node:path';
import { invalidArgument } from '../../core/errors.ts';
import type { HandlerKit, QueueServiceImpl } from './kit.ts';

export function backupHandlers(kit: HandlerKit): Pick<QueueServiceImpl, 'backup'> {
  const { queue, logger, handle } = kit;
  return {
    // The copy is written where the server runs, so its path is one on the server's machine.
    backup: handle('backup', 'backup', async (req, { principal }) => {
      if (!isAbsolute(req.path)) throw invalidArgument('path', 'must be an absolute path on the server');
      const summary = await queue.backup(req.path);
      logger.info({ ...summary, caller: principal.name }, 'backed up the store');
      return {
        path: summary.path,
        jobs: BigInt(summary.jobs),
        rows: BigInt(summary.rows),
        pauseUs: BigInt(summary.pauseMicros),
        durationUs: BigInt(summary.durationMicros),
      };
    }),
  };
}
