/**
 * The overview's controls over kinds: the Paused panel (pause a prefix, resume one) and the
 * Limits panel (set, change or clear a kind limit). Each form posts with the session's CSRF
 * token; a refused one comes back to this page with the message in its panel and the values as
 * they were typed.
 */
import type { KindLimitStatus } from '../../core/kind-limits.ts';
import type { Pause } from '../../core/pauses.ts';
import type { BlockedKey } from '../../core/ordered-keys.ts';
import { formatRate } from '../../core/rate.ts';
import { html, type Html } from '../html.ts';
import { csrfField, notice, number, type Viewer } from './layout.ts';

/** A control's form the server refused: which panel, why, and what was typed. */
export interface Refusal {
  readonly panel: 'pauses' | 'limits' | 'keys' | 'tenant-limits';
  readonly message: string;
  readonly values: Readonly<Record<string, string>>;
}

function pauseScopeName(pause: Pause): string {
  if (pause.scope === 'everywhere') return 'everywhere';
  return pause.scope.type === 'system' ? 'system' : `tenant ${pause.scope.tenant}`;
}

/** A pause's scope as the forms post it. */
function pauseFormScope(pause: Pause): string {
  if (pause.scope === 'everywhere') return 'everywhere';
  return pause.scope.type === 'system' ? 'system' : `tenant:${pause.scope.tenant}`;
}

/**
 * The form that pauses a prefix. An operator picks where (everywhere, the system scope, or a
 * tenant the server knows); a tenant pauses in its own scope, so its form has no choice.
 */
function pauseForm(viewer: Viewer, tenants: readonly string[], values: Readonly<Record<string, string>>): Html {
  const chosen = values['scope'] ?? 'everywhere';
  const option = (value: string, label: string): Html =>
    html`<option value="${value}" ${value === chosen ? html` selected` : ''}>${label}</option>`;
  return html`<form method="post" action="/pauses/pause" class="filters control" id="pause-form">
    ${csrfField(viewer)}
    <label
      >Kind prefix
      <input name="kind_prefix" value="${values['kind_prefix'] ?? ''}" placeholder="email." required />
    </label>
    ${
      viewer.principal.role === 'operator'
        ? html`<label
            >Where
            <select name="scope">
              ${option('everywhere', 'everywhere')}${option('system', 'system scope')}${tenants.map((t) =>
                option(`tenant:${t}`, `tenant ${t}`),
              )}
            </select>
          </label>`
        : ''
    }
    <button class="primary" id="pause">Pause</button>
  </form>`;
}

export function pausesPanel(
  viewer: Viewer,
  pauses: readonly Pause[],
  tenants: readonly string[],
  refused: Refusal | null,
): Html {
  // A tenant sees the pauses everywhere too, but only an operator may resume those.
  const mayResume = (pause: Pause): boolean =>
    viewer.principal.role === 'operator' || (viewer.principal.role === 'tenant' && pause.scope !== 'everywhere');
  const mine = refused?.panel === 'pauses' ? refused : null;
  return html`<section class="panel" id="pauses">
    <h2>
      Paused
      <span class="hint"
        >Pending jobs of these kind prefixes are not leased until resumed; enqueues are still accepted (telha
        pause)</span
      >
    </h2>
    ${mine === null ? '' : notice('error', mine.message)}
    ${
      pauses.length === 0
        ? html`<p class="empty">Nothing paused.</p>`
        : html`<table class="grid">
            <thead>
              <tr>
                <th>Kind prefix</th>
                <th>Where</th>
                <th>By</th>
                <th></th>
              </tr>
            </thead>
            <tbody>
              ${pauses.map(
                (p) =>
                  html`<tr>
                    <td class="mono">${p.kindPrefix}</td>
                    <td>${pauseScopeName(p)}</td>
                    <td>${p.by}</td>
                    <td>
                      ${
                        mayResume(p)
                          ? html`<form method="post" action="/pauses/resume" class="inline">
                              ${csrfField(viewer)}<input
                                type="hidden"
                                name="kind_prefix"
                                value="${p.kindPrefix}"
                              /><input type="hidden" name="scope" value="${pauseFormScope(p)}" /><button
                                class="primary"
                              >
                                Resume
                              </button>
                            </form>`
                          : ''
                      }
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    ${pauseForm(viewer, tenants, mine?.values ?? {})}
  </section>`;
}

/**
 * The kind limits, each row editable in place (its inputs belong to the row's form by their
 * `form` attribute, since a form cannot span table cells), and a form to limit another prefix.
 * An empty concurrency or rate means no bound of that sort.
 */
export function limitsPanel(viewer: Viewer, limits: readonly KindLimitStatus[], refused: Refusal | null): Html {
  const mine = refused?.panel === 'limits' ? refused : null;
  // A refused edit of a row shows what was typed in that row; a refused new limit, in the form below.
  const typed = (prefix: string, name: string, stored: string): string =>
    mine !== null && mine.values['kind_prefix'] === prefix ? (mine.values[name] ?? '') : stored;
  const isRow = mine !== null && limits.some((l) => l.kindPrefix === mine.values['kind_prefix']);
  return html`<section class="panel" id="limits">
    <h2>
      Limits
      <span class="hint"
        >at most this many leased at once, and leases per period (e.g. 100/s, 10/1m), in every scope; empty means no
        bound (telha limits)</span
      >
    </h2>
    ${mine === null ? '' : notice('error', mine.message)}
    ${
      limits.length === 0
        ? html`<p class="empty">No kind limits.</p>`
        : html`<table class="grid">
            <thead>
              <tr>
                <th>Kind prefix</th>
                <th class="num">Leased</th>
                <th>Concurrency</th>
                <th>Rate</th>
                <th class="num">Tokens</th>
                <th>By</th>
                <th></th>
              </tr>
            </thead>
            <tbody>
              ${limits.map((l, i) => {
                const id = `limit-${i}`;
                const concurrency = l.concurrency === null ? '' : String(l.concurrency);
                const rate = l.rate === null ? '' : formatRate(l.rate);
                return html`<tr data-prefix="${l.kindPrefix}">
                  <td class="mono">${l.kindPrefix}</td>
                  <td class="num">${number(l.leased)}</td>
                  <td>
                    <input
                      class="small"
                      form="${id}"
                      name="concurrency"
                      inputmode="numeric"
                      value="${typed(l.kindPrefix, 'concurrency', concurrency)}"
                      aria-label="concurrency of ${l.kindPrefix}"
                    />
                  </td>
                  <td>
                    <input
                      class="small"
                      form="${id}"
                      name="rate"
                      value="${typed(l.kindPrefix, 'rate', rate)}"
                      aria-label="rate of ${l.kindPrefix}"
                    />
                  </td>
                  <td class="num">${l.tokens === null ? '–' : number(l.tokens)}</td>
                  <td>${l.by}</td>
                  <td class="actions">
                    <div class="row-actions">
                      <form method="post" action="/limits/set" class="inline" id="${id}">
                        ${csrfField(viewer)}<input type="hidden" name="kind_prefix" value="${l.kindPrefix}" /><button>
                          Save
                        </button>
                      </form>
                      <form method="post" action="/limits/clear" class="inline">
                        ${csrfField(viewer)}<input type="hidden" name="kind_prefix" value="${l.kindPrefix}" /><button
                          class="subtle"
                        >
                          Clear
                        </button>
                      </form>
                    </div>
                  </td>
                </tr>`;
              })}
            </tbody>
          </table>`
    }
    <form method="post" action="/limits/set" class="filters control" id="limit-form">
      ${csrfField(viewer)}
      <label
        >Kind prefix
        <input
          name="kind_prefix"
          value="${isRow ? '' : (mine?.values['kind_prefix'] ?? '')}"
          placeholder="email."
          required
        />
      </label>
      <label
        >Concurrency
        <input
          name="concurrency"
          inputmode="numeric"
          value="${isRow ? '' : (mine?.values['concurrency'] ?? '')}"
          placeholder="10"
      /></label>
      <label>Rate <input name="rate" value="${isRow ? '' : (mine?.values['rate'] ?? '')}" placeholder="100/s" /></label>
      <button class="primary" id="set-limit">Set limit</button>
    </form>
  </section>`;
}

/**
 * Ordered keys whose line cannot move on by itself (the first job dead, or pruned), each with a
 * Release button: its dead head leaves the key (it stays dead) and the next job runs.
 */
export function blockedKeysPanel(viewer: Viewer, keys: readonly BlockedKey[], refused: Refusal | null): Html {
  const mine = refused?.panel === 'keys' ? refused : null;
  return html`<section class="panel" id="keys">
    <h2>
      Blocked keys
      <span class="hint"
        >ordered keys whose first job is dead: nothing behind it runs until it is retried, discarded or the key released
        (telha keys)</span
      >
    </h2>
    ${mine === null ? '' : notice('error', mine.message)}
    ${
      keys.length === 0
        ? html`<p class="empty">No blocked keys.</p>`
        : html`<table class="grid">
            <thead>
              <tr>
                <th>Order key</th>
                <th>Scope</th>
                <th>Dead head</th>
                <th>Waiting</th>
                <th></th>
              </tr>
            </thead>
            <tbody>
              ${keys.map(
                (k) =>
                  html`<tr>
                    <td class="mono">${k.orderKey}</td>
                    <td>${k.tenant === null ? 'system' : `tenant ${k.tenant}`}</td>
                    <td class="mono">
                      ${k.head === null ? '(pruned)' : html`<a href="/jobs/${k.head.jobId}">${k.head.jobId}</a>`}
                    </td>
                    <td class="num">${number(k.waiting)}</td>
                    <td>
                      <form method="post" action="/keys/release" class="inline">
                        ${csrfField(viewer)}<input type="hidden" name="order_key" value="${k.orderKey}" /><input
                          type="hidden"
                          name="scope"
                          value="${k.tenant === null ? 'system' : `tenant:${k.tenant}`}"
                        /><button class="primary">Release</button>
                      </form>
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}
