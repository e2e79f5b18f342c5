/**
 * What a CLI command touches outside itself, passed in rather than reached
 * for: where it prints, the environment it reads, the time, and the server it
 * calls. The `telha` binary passes the process's own; tests pass writers that
 * collect the output, and run every command in their own process.
 */
import { systemClock, type Clock } from '../core/clock.ts';
import type { TelhaClient } from '../client/client.ts';

export interface CliIo {
  /** Standard output: what a script reads (a table, JSON, an id). */
  readonly stdout: (text: string) => void;
  /** Standard error: errors, and notes for the person at the terminal. */
  readonly stderr: (text: string) => void;
  /** `TELHA_ADDRESS`, `TELHA_TOKEN` are read from here. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Now, for what depends on it (whether a job's gate has opened yet). */
  readonly clock: Clock;
}

/** The calls the `telha jobs` and `telha schedules` commands make on a server. */
export type OperatorClient = Pick<
  TelhaClient,
  | 'show'
  | 'list'
  | 'counts'
  | 'retry'
  | 'discard'
  | 'runNow'
  | 'blockedKeys'
  | 'releaseKey'
  | 'cancel'
  | 'cancelMatching'
  | 'enqueue'
  | 'createSchedule'
  | 'updateSchedule'
  | 'getSchedule'
  | 'listSchedules'
  | 'deleteSchedule'
  | 'runSchedule'
  | 'pause'
  | 'resume'
  | 'pauses'
  | 'setKindLimit'
  | 'clearKindLimit'
  | 'kindLimits'
  | 'setTenantLimit'
  | 'clearTenantLimit'
  | 'tenantLimits'
  | 'backup'
>;

/** The running process's streams and environment. */
export function processIo(): CliIo {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    env: process.env,
    clock: systemClock,
  };
}

/** A bad command line: exit code 2, with the message. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Print a value on its own line: text as it is, anything else as indented JSON. */
export function printLine(write: (text: string) => void, value: unknown): void {
  write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);
}
