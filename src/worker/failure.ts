/**
 * What a failed attempt reports: the handler's error message, then the frames of its stack
 * (`    at ...` lines), as many as fit a job event's detail. The dashboard's job page shows the
 * first line as the message and the frames folded under it; `telha jobs show` prints them as
 * they are. The message comes first and whole, so a cut never takes it.
 */
import { MAX_EVENT_DETAIL_CHARS } from '../core/bounds.ts';
import { TelhaError } from '../core/errors.ts';

/** Frames a failure carries at most: enough to find the throw and its callers. */
export const MAX_STACK_FRAMES = 16;
/** Room the `failed` event's own words (worker, generation, attempt) take before the error. */
const EVENT_PREFIX_CHARS = 160;

/** A handler's failure as the text a `fail` carries. */
export function failureText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // The SDK's own refusals (a completion the server refused) have frames of the client, not the handler.
  if (error instanceof TelhaError || typeof error.stack !== 'string') return error.message;
  let text = error.message;
  let frames = 0;
  for (const line of error.stack.split('\n')) {
    if (!/^\s+at /.test(line)) continue;
    if (frames === MAX_STACK_FRAMES || text.length + 1 + line.length > MAX_EVENT_DETAIL_CHARS - EVENT_PREFIX_CHARS) {
      break;
    }
    text += `\n${line}`;
    frames++;
  }
  return text;
}
