/**
 * HTML that escapes by default. Every value interpolated into an `html`
 * template is escaped unless it is itself the output of `html` (or of
 * {@link trusted}, used only for constant markup), so job content a producer
 * controls (kinds, payloads, errors, tenants) can only ever become text.
 *
 * Values are escaped for text and for double-quoted attribute values, which
 * is every context the dashboard's templates use: no value is ever placed in
 * a script, a style, an event handler or an unquoted attribute, and URLs are
 * built by {@link href}, which only makes same-site paths.
 */

const SAFE = Symbol('telha.html');

/** Markup that is already safe to emit as it is. */
export interface Html {
  readonly [SAFE]: true;
  readonly text: string;
}

/** A value a template accepts: text (escaped), markup, a list of either, or nothing. */
export type HtmlValue = string | number | bigint | boolean | null | undefined | Html | readonly HtmlValue[];

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Text as it must appear in HTML text or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ESCAPES[c] ?? c);
}

function isHtml(value: unknown): value is Html {
  return typeof value === 'object' && value !== null && (value as Partial<Html>)[SAFE] === true;
}

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (typeof value === 'string') return escapeHtml(value);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (isHtml(value)) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  // Nothing else is accepted by the types; an object that only looks like markup is text.
  return escapeHtml(Object.prototype.toString.call(value));
}

/** The tagged template: `html\`<td>${job.kind}</td>\`` escapes the kind. */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): Html {
  let text = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) text += render(values[i]) + (strings[i + 1] ?? '');
  return { [SAFE]: true, text };
}

/** Constant markup written in this codebase (never data). */
export function trusted(markup: string): Html {
  return { [SAFE]: true, text: markup };
}

/**
 * A same-site URL: a path of this dashboard with query parameters, each
 * encoded. Producer data only ever reaches a URL through here, so a
 * `javascript:` kind or tenant stays a query value, never a scheme.
 */
export function href(
  path: `/${string}`,
  query: Readonly<Record<string, string | number | null | undefined>> = {},
): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== null && value !== undefined && value !== '') params.set(key, String(value));
  }
  const search = params.toString();
  return search === '' ? path : `${path}?${search}`;
}
