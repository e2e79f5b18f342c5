/** Turning command-line text into request values, refusing bad usage before anything is sent. */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';
import { JOB_STATE_NAMES, JobState, SYSTEM_SCOPE, tenantScope, type QueueScope } from '../core/types.ts';
import { WIRE_INTEGERS, type WireInteger } from '../wire/integers.ts';
import { UsageError } from './io.ts';

/** `--tenant` / `--system`, on the commands that take a scope. */
export interface ScopeOptions {
  readonly tenant?: string;
  readonly system?: boolean;
}

/**
 * A commander parser for a number the request carries as the wire integer `type`, naming the
 * flag when the text is not an integer in that type's range; the server checks the field's own
 * bounds (a priority of 0-255) and names the field.
 */
export function wireInteger(flag: string, type: WireInteger): (value: string) => number {
  const { min, max } = WIRE_INTEGERS[type];
  return integerIn(flag, min, max);
}

/** A commander parser for an integer in `[min, max]`, naming the flag when it is not one. */
export function integerIn(
  flag: string,
  min: number,
  max: number,
  message = `${flag} must be an integer from ${min} to ${max}`,
): (value: string) => number {
  return (value) => {
    const n = /^-?\d+$/.test(value) ? Number(value) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(message);
    return n;
  };
}

/** The states a job can be found in. Failed is reserved in the key space and never set, so it is no filter. */
export const LISTED_STATES: Readonly<Record<string, JobState>> = Object.fromEntries(
  [JobState.Pending, JobState.Leased, JobState.Completed, JobState.Dead, JobState.Cancelled].map((s) => [
    JOB_STATE_NAMES[s],
    s,
  ]),
);

/** The scope the flags name, or `undefined` when they name none. */
export function scopeOf(options: ScopeOptions): QueueScope | undefined {
  if (options.tenant !== undefined && options.system) throw new UsageError('--tenant and --system exclude each other');
  if (options.system) return SYSTEM_SCOPE;
  return options.tenant === undefined ? undefined : tenantScope(options.tenant);
}

/** The scope the flags name, which `what` cannot do without. */
export function requiredScope(options: ScopeOptions, what: string): QueueScope {
  const scope = scopeOf(options);
  if (scope === undefined) throw new UsageError(`${what} needs a scope: --tenant <tenant> or --system`);
  return scope;
}

/** `--payload`: JSON text as its UTF-8 bytes, or `@path` for a file's raw bytes. */
export function readPayload(spec: string | undefined): Uint8Array | undefined {
  if (spec === undefined) return undefined;
  if (spec.startsWith('@')) {
    try {
      return readFileSync(spec.slice(1));
    } catch (error) {
      throw new UsageError(`cannot read payload file ${spec.slice(1)}: ${(error as Error).message}`);
    }
  }
  try {
    JSON.parse(spec);
  } catch {
    throw new UsageError('--payload must be JSON (or @file for raw bytes)');
  }
  return Buffer.from(spec, 'utf8');
}
