/**
 * A job's values as a page shows them: payload, continuation, result and
 * progress, each bounded in size and in depth whatever the job holds, with a
 * link to its raw bytes. A producer chooses these values, so the page must
 * not grow with their shape: pretty-printed by `JSON.stringify(value, null,
 * 2)`, 8,000 bytes of arrays nested 4,000 deep became 32,004,459 bytes of
 * indentation (bench/RESULTS.md, "Bounded values on the job page").
 */
import { href, html, type Html } from '../html.ts';
import type { RawValue } from '../params.ts';
import { number } from './layout.ts';

/**
 * Characters of one value a page shows at most. Escaped, a character is at most 6 bytes
 * (`&quot;`), so the four values stay under 400 KB, and with the audit trail (64 events of at
 * most 1,024 characters) a job page under 1 MiB.
 */
export const MAX_SHOWN_CHARS = 16 * 1024;
/** Bytes read into a value's view at most: a JSON value this long or shorter is parsed and pretty-printed. */
export const MAX_READ_BYTES = 64 * 1024;
/** Bytes shown as hex at most: three characters and a bit each. */
export const MAX_HEX_BYTES = MAX_SHOWN_CHARS / 4;
/** Levels of nesting indented at most; deeper ones continue on their parent's line. */
export const MAX_SHOWN_DEPTH = 16;

/** Where a value's raw bytes download from. */
export function rawHref(jobId: string, value: RawValue): string {
  return href(`/jobs/${jobId}/raw/${value}`);
}

/** A value's view: its text (JSON pretty-printed) or hex, cut to the bounds above, and its download link. */
export function valueView(jobId: string, name: RawValue, value: Uint8Array | string): Html {
  const size = typeof value === 'string' ? Buffer.byteLength(value) : value.byteLength;
  if (size === 0) return html`<p class="empty">(empty)</p>`;
  const shown = shownText(value);
  const download = html`<a class="download" href="${rawHref(jobId, name)}" download>download raw</a>`;
  const hint =
    shown.bytes < size
      ? html`<p class="hint truncated">
          Truncated: showing the first ${number(shown.bytes)} of ${number(size)} bytes${shown.hex ? ' as hex' : ''};
          ${download}
        </p>`
      : html`<p class="hint">${number(size)} bytes · ${download}</p>`;
  return html`${hint}
    <pre class="payload${shown.hex ? ' hex' : ''}">${shown.text}</pre>`;
}

interface Shown {
  readonly text: string;
  /** Bytes of the value the text stands for, from its start. */
  readonly bytes: number;
  readonly hex: boolean;
}

function shownText(value: Uint8Array | string): Shown {
  const read = typeof value === 'string' ? { text: value, bytes: Buffer.byteLength(value) } : utf8Text(value);
  if (read === null) return hexText(value as Uint8Array);
  const whole = typeof value === 'string' || read.bytes === value.byteLength;
  if (whole && /^\s*[[{]/.test(read.text) && isJson(read.text)) {
    const pretty = prettyJson(read.text, MAX_SHOWN_CHARS);
    return { text: pretty.text, bytes: Buffer.byteLength(read.text.slice(0, pretty.read)), hex: false };
  }
  const cut = cutChars(read.text, MAX_SHOWN_CHARS);
  return { text: cut, bytes: Buffer.byteLength(cut), hex: false };
}

/** The first {@link MAX_READ_BYTES} of `bytes` as UTF-8 text, or `null` when they are not text. */
function utf8Text(bytes: Uint8Array): { text: string; bytes: number } | null {
  const read = bytes.subarray(0, MAX_READ_BYTES);
  let text: string;
  try {
    // stream: a multi-byte character cut by the limit is held back, not an error.
    text = new TextDecoder('utf-8', { fatal: true }).decode(read, { stream: read.byteLength < bytes.byteLength });
  } catch {
    return null;
  }
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(text)) return null;
  return { text, bytes: Buffer.byteLength(text) };
}

function hexText(bytes: Uint8Array): Shown {
  const shown = bytes.subarray(0, MAX_HEX_BYTES);
  const text = Buffer.from(shown)
    .toString('hex')
    .replace(/(.{2})/g, '$1 ')
    .replace(/((?:\S\S ){16})/g, '$1\n')
    .trimEnd();
  return { text, bytes: shown.byteLength, hex: true };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The first `max` characters of `text`, never ending inside a surrogate pair. */
function cutChars(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/**
 * Valid JSON text laid out two spaces a level, as `JSON.stringify(value, null, 2)` lays it out,
 * but written token by token from the text (no recursion, so no depth can overflow the stack),
 * indenting at most {@link MAX_SHOWN_DEPTH} levels, and stopping once `budget` characters are
 * written. `read` is how many characters of `text` the output stands for.
 */
export function prettyJson(text: string, budget: number): { text: string; read: number } {
  let out = '';
  let depth = 0;
  let i = 0;
  const newline = (level: number): string => `\n${'  '.repeat(level)}`;
  while (i < text.length && out.length < budget) {
    const c = text[i] as string;
    let end = i + 1;
    if (c === '"') {
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      end = Math.min(end + 1, text.length);
    } else if (!/[\s,:[\]{}]/.test(c)) {
      // A number, true, false or null: up to the next delimiter.
      while (end < text.length && !/[\s,:[\]{}"]/.test(text[end] as string)) end++;
    } else {
      // Structure: a few characters of its own, which may run a little past the budget (cut below).
      if (c === '[' || c === '{') {
        while (/\s/.test(text[end] ?? '')) end++;
        if (text[end] === (c === '[' ? ']' : '}')) {
          out += c === '[' ? '[]' : '{}';
          end++;
        } else {
          depth++;
          out += depth <= MAX_SHOWN_DEPTH ? c + newline(depth) : c;
          end = i + 1;
        }
      } else if (c === ']' || c === '}') {
        out += depth <= MAX_SHOWN_DEPTH ? newline(depth - 1) + c : c;
        depth--;
      } else if (c === ',') {
        out += depth <= MAX_SHOWN_DEPTH ? `,${newline(depth)}` : ',';
      } else if (c === ':') {
        out += ': ';
      }
      i = end;
      continue;
    }
    // A string or a literal, copied as it is written: cut at the budget, counting only what is shown as read.
    const whole = text.slice(i, end);
    const token = cutChars(whole, budget - out.length);
    out += token;
    i += token.length;
    if (token.length < whole.length) break;
  }
  return { text: cutChars(out, budget), read: i };
}
