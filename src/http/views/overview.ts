/** The overview: counts by state, kind and tenant, and the live charts. */
import { limitLane, type KindLimitStatus } from '../../core/kind-limits.ts';
import { pauseCoversKind, type Pause } from '../../core/pauses.ts';
import { formatRate } from '../../core/rate.ts';
import { JobState, type CountRow } from '../../core/types.ts';
import { href, html, type Html } from '../html.ts';
import { csrfField, number, page, type Viewer } from './layout.ts';

/** The states an operator watches, in the order a job moves through them. */
export const SHOWN_STATES = [
  { state: JobState.Pending, name: 'pending', label: 'Pending' },
  { state: JobState.Leased, name: 'leased', label: 'Leased' },
  { state: JobState.Completed, name: 'completed', label: 'Completed' },
  { state: JobState.Dead, name: 'dead', label: 'Dead' },
  { state: JobState.Cancelled, name: 'cancelled', label: 'Cancelled' },
] as const;

export interface OverviewData {
  readonly counts: readonly CountRow[];
  /** Per tenant, for operators; `null` for a tenant's own view. */
  readonly tenants: readonly { tenant: string; counts: readonly CountRow[] }[] | null;
  readonly backend: string;
  /** Pauses that hold back work the viewer sees; `null` when the viewer may not read pauses. */
  readonly pauses?: readonly Pause[] | null;
  /** Kind limits with their lanes now; `null` (or absent) when the viewer is not an operator. */
  readonly limits?: readonly KindLimitStatus[] | null;
}

/** The kind limits, each with its lane's leased jobs and tokens now; changed with `telha limits`. */
function limitsPanel(limits: readonly KindLimitStatus[]): Html | '' {
  if (limits.length === 0) return '';
  return html`<section class="panel" id="limits">
    <h2>
      Limits
      <span class="hint">at most this many leased at once, and leases per period, in every scope (telha limits)</span>
    </h2>
    <table class="grid">
      <thead>
        <tr>
          <th>Kind prefix</th>
          <th class="num">Leased</th>
          <th class="num">Concurrency</th>
          <th>Rate</th>
          <th class="num">Tokens</th>
          <th>By</th>
        </tr>
      </thead>
      <tbody>
        ${limits.map(
          (l) =>
            html`<tr>
              <td class="mono">${l.kindPrefix}</td>
              <td class="num">${number(l.leased)}</td>
              <td class="num">${l.concurrency === null ? '–' : number(l.concurrency)}</td>
              <td class="mono">${l.rate === null ? '–' : formatRate(l.rate)}</td>
              <td class="num">${l.tokens === null ? '–' : number(l.tokens)}</td>
              <td>${l.by}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
}

function pauseScopeName(pause: Pause): string {
  if (pause.scope === 'everywhere') return 'everywhere';
  return pause.scope.type === 'system' ? 'system' : `tenant ${pause.scope.tenant}`;
}

/** The paused prefixes, with where and by whom; resumed with `telha resume`. */
function pauseFormScope(pause: Pause): string {
  if (pause.scope === 'everywhere') return 'everywhere';
  return pause.scope.type === 'system' ? 'system' : `tenant:${pause.scope.tenant}`;
}

function pausesPanel(viewer: Viewer, pauses: readonly Pause[]): Html | '' {
  // A tenant sees the pauses everywhere too, but only an operator may resume those.
  const mayResume = (pause: Pause): boolean =>
    viewer.principal.role === 'operator' || (viewer.principal.role === 'tenant' && pause.scope !== 'everywhere');
  if (pauses.length === 0) return '';
  return html`<section class="panel" id="pauses">
    <h2>
      Paused <span class="hint">Pending jobs of these kind prefixes are not leased until resumed (telha resume)</span>
    </h2>
    <table class="grid">
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
                        ${csrfField(viewer)}<input type="hidden" name="kind_prefix" value="${p.kindPrefix}" /><input
                          type="hidden"
                          name="scope"
                          value="${pauseFormScope(p)}"
                        /><button class="primary">Resume</button>
                      </form>`
                    : ''
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
}

/** The kind limit a kind falls under, as a badge naming its prefix. */
function limitBadge(prefix: string | null): Html | '' {
  if (prefix === null) return '';
  return html` <span class="badge limited" title="under the kind limit ${prefix}: see Limits below">limited</span>`;
}

function totals(rows: readonly CountRow[]): Map<JobState, number> {
  const out = new Map<JobState, number>();
  for (const row of rows) out.set(row.state, (out.get(row.state) ?? 0) + row.count);
  return out;
}

function stateCells(byState: Map<JobState, number>, link: (state: string) => string): Html[] {
  return SHOWN_STATES.map(({ state, name }) => {
    const n = byState.get(state) ?? 0;
    return html`<td class="num">
      ${n === 0 ? html`<span class="zero">0</span>` : html`<a href="${link(name)}">${number(n)}</a>`}
    </td>`;
  });
}

/** Rows of counts by state, each row's name and numbers linking to the jobs they count. */
function countsTable(
  label: string,
  rows: readonly (readonly [string, Map<JobState, number>])[],
  empty: string,
  filter: (name: string) => Record<string, string>,
  paused: (name: string) => boolean = () => false,
  lane: (name: string) => string | null = () => null,
): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<table class="grid">
    <thead>
      <tr>
        <th>${label}</th>
        ${SHOWN_STATES.map((s) => html`<th class="num">${s.label}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        ([name, states]) =>
          html`<tr>
            <td>
              <a class="mono" href="${href('/jobs', filter(name))}">${name}</a>${
                paused(name)
                  ? html` <span class="badge paused" title="paused in some scope: see Paused below">paused</span>`
                  : ''
              }${limitBadge(lane(name))}
            </td>
            ${stateCells(states, (state) => href('/jobs', { ...filter(name), state }))}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export function overviewPage(viewer: Viewer, data: OverviewData): Html {
  const byState = totals(data.counts);
  const byKind = new Map<string, Map<JobState, number>>();
  for (const row of data.counts) {
    const kind = byKind.get(row.kind) ?? new Map<JobState, number>();
    kind.set(row.state, (kind.get(row.state) ?? 0) + row.count);
    byKind.set(row.kind, kind);
  }
  const cards = SHOWN_STATES.map(
    ({ state, name, label }) =>
      html`<a class="card ${name}" href="${href('/jobs', { state: name })}">
        <span class="label">${label}</span>
        <span class="value" data-count="${name}">${number(byState.get(state) ?? 0)}</span>
      </a>`,
  );
  const kinds = [...byKind.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const scopeNote = viewer.principal.role === 'tenant' ? html` of tenant <b>${viewer.principal.tenant}</b>` : '';
  return page({
    title: 'Overview',
    section: 'overview',
    viewer,
    body: html`<div class="heading">
        <h1>Overview${scopeNote}</h1>
        <span class="live" id="live" data-state="connecting"
          ><span class="dot"></span><span id="live-text">connecting…</span></span
        >
      </div>
      <section class="cards">${cards}</section>
      <section class="charts">
        <figure class="chart-box">
          <figcaption>Throughput, jobs/s <span class="hint">last hour</span></figcaption>
          <div class="chart" id="chart-throughput" data-series="enqueued completed failed dead"></div>
        </figure>
        <figure class="chart-box">
          <figcaption>
            Oldest Pending job, age in s
            <span class="hint">${viewer.principal.role === 'tenant' ? 'shown to operators only' : 'last hour'}</span>
          </figcaption>
          <div class="chart" id="chart-age" data-series="oldestPendingAge"></div>
        </figure>
      </section>
      <section class="panel">
        <h2>By kind</h2>
        ${countsTable(
          'Kind',
          kinds,
          'No jobs yet.',
          (kind) => ({ kind }),
          (kind) => (data.pauses ?? []).some((p) => pauseCoversKind(p.kindPrefix, kind)),
          (kind) => limitLane(data.limits ?? [], kind),
        )}
      </section>
      ${pausesPanel(viewer, data.pauses ?? [])} ${limitsPanel(data.limits ?? [])}
      ${
        data.tenants === null
          ? ''
          : html`<section class="panel">
              <h2>
                By tenant <span class="hint">tenants named by tokens or seen by this server since it started</span>
              </h2>
              ${countsTable(
                'Tenant',
                data.tenants.map(({ tenant, counts }) => [tenant, totals(counts)] as const),
                'No tenants seen yet.',
                (tenant) => ({ tenant }),
              )}
            </section>`
      }
      <p class="footnote">
        Store: ${data.backend}. Counts are at most a few seconds old; the cards and charts update live.
      </p>`,
  });
}
