/**
 * The statements of a completion or failure written in an application's transaction
 * (`transactional.ts`): the locking read it starts with, and the statement that leaves the
 * transaction unable to commit when the call is refused. Pure functions returning query text.
 */
import { writeLocks } from './controls.ts';

/**
 * Read job `$1`'s record and lock its row until the application's transaction ends, so nothing
 * else (its holder's heartbeat, the reaper, another completion) changes it in between: the
 * fence is checked against the row as it stays. The same statement queues the notification
 * (`$2` the channel, `$3` the payload) that tells every server to read the transitions log
 * again; PostgreSQL delivers it only if the transaction commits, so a refused call sends none.
 *
 * With `locks` (the write may make the job Pending again, or enqueue successors), it first
 * takes the write locks' share (`writeLocks`), as the store's own locked update does: taken
 * after the row lock, a pause or kind limit waiting for this row would wait for this
 * transaction, which would wait for it.
 */
export function lockJobText(t: string, locks: boolean): string {
  return `SELECT record, pg_notify($2, $3)::text AS notified FROM ${t}.jobs
    WHERE job_id = $1${locks ? ` AND ${writeLocks(t)}` : ''} FOR UPDATE`;
}

/**
 * A statement that fails, so the transaction it runs in is aborted and its COMMIT becomes a
 * ROLLBACK, even when the application catches the error and commits anyway. `jobId` is a
 * checked UUID (`null` when it did not pass the check) and `code` one of Telha's error codes, so neither needs quoting; the message
 * says why in the application's logs.
 */
export function abortText(jobId: string | null, code: string): string {
  const job = jobId === null ? 'a job' : `job ${jobId}`;
  const message = `telha: the change to ${job} was refused (${code}); this transaction cannot commit`;
  return `DO $telha$ BEGIN RAISE EXCEPTION '${message}' USING ERRCODE = 'P0001'; END $telha$`;
}
