/** The page frame every dashboard page shares, and the small pieces they all use. */
import { duration } from '../../util/durations.ts';
import { JOB_STATE_NAMES, type JobState, type Micros } from '../../core/types.ts';
import type { Principal } from '../../edge/auth.ts';
import { html, trusted, type Html, type HtmlValue } from '../html.ts';

/** What a page knows about who is looking. */
export interface Viewer {
  readonly principal: Principal;
  /** The session's CSRF token, echoed by every form that changes something. */
  readonly csrf: string;
  /** Whether a login page exists (tokens are configured), so a logout makes sense. */
  readonly canLogout: boolean;
}

export type Section = 'overview' | 'jobs' | 'leases' | 'schedules' | null;

// htmx reads its configuration from this tag: no inline indicator <style> (the CSP forbids inline
// styles), no eval, no script tags in swapped content, requests to this origin only.
const HTMX_CONFIG = trusted(
  `<meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"selfRequestsOnly":true,"historyCacheSize":0}'>`,
);

export function page(options: { title: string; section: Section; viewer: Viewer | null; body: Html }): Html {
  const { title, section, viewer, body } = options;
  const tab = (name: Exclude<Section, null>, path: string, label: string): Html =>
    html`<a
      href="${path}"
      class="tab${section === name ? ' active' : ''}"
      ${section === name ? trusted(' aria-current="page"') : ''}
      >${label}</a
    >`;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${HTMX_CONFIG} ${viewer === null ? '' : html`<meta name="csrf-token" content="${viewer.csrf}" />`}
        <title>${title} · Telha</title>
        <link rel="stylesheet" href="/assets/uPlot.min.css" />
        <link rel="stylesheet" href="/assets/app.css" />
        <script src="/assets/htmx.min.js" defer></script>
        <script src="/assets/uPlot.iife.min.js" defer></script>
        <script src="/assets/app.js" defer></script>
      </head>
      <body>
        <header class="top">
          <a class="brand" href="/"><span class="logo" aria-hidden="true">▦</span> Telha</a>
          ${
            viewer === null
              ? ''
              : html`<nav>
                    ${tab('overview', '/', 'Overview')}${tab('jobs', '/jobs', 'Jobs')}${tab('leases', '/leases', 'Leases')}${tab('schedules', '/schedules', 'Schedules')}
                  </nav>
                  <div class="who">
                    ${who(viewer.principal)}${
                      viewer.canLogout
                        ? html`<form method="post" action="/logout" class="inline">
                            ${csrfField(viewer)}<button class="link">Log out</button>
                          </form>`
                        : ''
                    }
                  </div>`
          }
        </header>
        <main>${body}</main>
      </body>
    </html>`;
}

function who(principal: Principal): Html {
  if (principal.role === 'tenant') return html`<span class="chip">tenant <b>${principal.tenant}</b></span>`;
  return html`<span class="chip">${principal.role} · ${principal.name}</span>`;
}

/** The hidden field every state-changing form carries. */
export function csrfField(viewer: Viewer): Html {
  return html`<input type="hidden" name="_csrf" value="${viewer.csrf}" />`;
}

export function stateBadge(state: JobState): Html {
  const name = JOB_STATE_NAMES[state];
  return html`<span class="badge ${name}">${name}</span>`;
}

/** `2026-11-30 20:41:22.123` UTC. */
export function timestamp(at: Micros): string {
  return new Date(Math.floor(at / 1000)).toISOString().replace('T', ' ').replace('Z', '');
}

/** A duration, from µs, whatever its sign: 850ms, 12.3s, 4m05s. */
export function span(us: number): string {
  return duration(Math.abs(us));
}

/** A time with how long ago (or how far ahead) it is, the exact UTC time on hover. */
export function when(at: Micros, now: Micros): Html {
  const rel = at <= now ? `${span(now - at)} ago` : `in ${span(at - now)}`;
  return html`<time datetime="${new Date(Math.floor(at / 1000)).toISOString()}" title="${timestamp(at)} UTC"
    >${rel}</time
  >`;
}

export function number(n: number): string {
  return n.toLocaleString('en-US');
}

/** A message box: an error, or a notice after an action. */
export function notice(kind: 'error' | 'ok' | 'info', message: HtmlValue): Html {
  return html`<div class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${message}</div>`;
}

/** An error page: the status and what went wrong, as text. */
export function errorPage(viewer: Viewer | null, status: number, message: string): Html {
  return page({
    title: `Error ${status}`,
    section: null,
    viewer,
    body: html`<h1>Error ${status}</h1>
      ${notice('error', message)}
      <p><a href="/">Back to the overview</a></p>`,
  });
}

/**
 * How a list page stays live (`data-live` on the part app.js fetches again, the visible page only):
 * on each of the overview stream's samples when the viewer's counts changed (a list of jobs moves
 * only by transitions, which move counts), or on every sample (leases: heartbeats move deadlines
 * without moving counts; schedules: edits move nothing the counts see). Either way at most one
 * fetch per `metrics.refresh_ms` per page, and none while one is in flight.
 */
export const LIVE_ON_COUNTS = 'counts';
export const LIVE_EVERY_SAMPLE = 'every-sample';

/** The live indicator of a list page, which app.js keeps up to date. */
export function liveBadge(): Html {
  return html`<span class="live" id="live" data-state="connecting"
    ><span class="dot"></span><span id="live-text">connecting…</span></span
  >`;
}
