/**
 * What a handler's return value becomes, and how people read it back. A result is opaque bytes
 * to the queue; the SDK writes JSON unless the handler returned bytes, so the CLI, the dashboard
 * and the client show it as JSON whenever it reads as such.
 */
import { invalidArgument } from './errors.ts';
import type { JobRecord } from './types.ts';

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder('utf-8', { fatal: true });

/**
 * A handler's return value as a result: `undefined` (or a value JSON has no text for, such as a
 * function) is none, bytes are kept as they are, anything else is its `JSON.stringify` as UTF-8.
 */
export function resultBytes(value: unknown): Uint8Array | undefined {
  if (value === undefined) return undefined;
  if (value instanceof Uint8Array) return value;
  const text = jsonText('result', value);
  return text === undefined ? undefined : encoder.encode(text);
}

/** A value as progress: its JSON text. */
export function progressText(value: unknown): string {
  const text = jsonText('progress', value);
  if (text === undefined) throw invalidArgument('progress', 'must be a number or a JSON object');
  return text;
}

/** `JSON.stringify`, with a value it cannot write (a BigInt, a cycle) refused naming `field`: the handler's bug, reported as its job's failure. */
function jsonText(field: string, value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch (error) {
    throw invalidArgument(field, `has no JSON form: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The result as JSON text, when it is UTF-8 that parses as JSON; otherwise `null` (raw bytes). */
export function resultJsonText(result: Uint8Array): string | null {
  let text: string;
  try {
    text = strictDecoder.decode(result);
    JSON.parse(text);
  } catch {
    return null;
  }
  return text;
}

/**
 * A job's result read as JSON: what its handler returned through the SDK. `undefined` when the
 * job has no result; throws a `TypeError` when the result is bytes that are not UTF-8 JSON text
 * (a handler that returned a `Uint8Array`: read `job.result` itself then).
 */
export function resultJson<T = unknown>(job: Pick<JobRecord, 'result'>): T | undefined {
  if (job.result === null) return undefined;
  const text = resultJsonText(job.result);
  if (text === null) throw new TypeError(`the result is ${job.result.byteLength} bytes that are not UTF-8 JSON text`);
  return JSON.parse(text) as T;
}
