/**
 * The form that creates a schedule or edits one: its timing (a cron expression in a time zone,
 * or an interval) and the job it enqueues. A refused form comes back with the message on top and
 * the values as typed.
 */
import type { Schedule } from '../../core/schedules.ts';
import { payloadText, scopeValue } from '../forms.ts';
import { html, type Html } from '../html.ts';
import { csrfField, notice, page, type Viewer } from './layout.ts';

export type ScheduleFormValues = Readonly<Record<string, string>>;

/** A stored schedule as the edit form's values; a payload that is not text has none (it is kept). */
export function scheduleValues(s: Schedule): ScheduleFormValues {
  const payload = payloadText(s.job.payload);
  return {
    scope: scopeValue(s.scope),
    name: s.name,
    cron: s.cron ?? '',
    timezone: s.timezone ?? '',
    every_secs: s.everySecs === null ? '' : String(s.everySecs),
    kind: s.job.kind,
    ...(payload === null ? {} : { payload }),
    priority: String(s.job.priority),
    max_attempts: s.job.maxAttempts === null ? '' : String(s.job.maxAttempts),
    timeout_secs: s.job.timeoutSecs === null ? '' : String(s.job.timeoutSecs),
  };
}

export interface ScheduleFormOptions {
  /** `null` to create one; the schedule's name to edit it. */
  readonly editing: string | null;
  readonly values: ScheduleFormValues;
  /** The scopes an operator may pick from (`system`, `tenant:<id>`); a tenant's form has none. */
  readonly scopes: readonly string[];
  readonly refused: string | null;
}

export function scheduleFormPage(viewer: Viewer, options: ScheduleFormOptions): Html {
  const { editing, values, scopes, refused } = options;
  const value = (name: string): string => values[name] ?? '';
  const field = (name: string, label: string, extra: Html | '' = ''): Html =>
    html`<label>${label} <input name="${name}" value="${value(name)}" ${extra} /></label>`;
  const chosen = value('scope');
  const scopeField =
    editing !== null || viewer.principal.role !== 'operator'
      ? chosen === ''
        ? ''
        : html`<input type="hidden" name="scope" value="${chosen}" />`
      : html`<label
          >Scope
          <select name="scope">
            ${scopes.map(
              (s) =>
                html`<option value="${s}" ${s === chosen ? html` selected` : ''}>
                  ${s === 'system' ? 'system scope' : `tenant ${s.slice(7)}`}
                </option>`,
            )}
          </select>
        </label>`;
  const binaryPayload = editing !== null && values['payload'] === undefined;
  return page({
    title: editing === null ? 'New schedule' : `Schedule ${editing}`,
    section: 'schedules',
    viewer,
    body: html`<div class="heading">
        <h1>${editing === null ? 'New schedule' : html`Schedule <span class="mono">${editing}</span>`}</h1>
      </div>
      ${refused === null ? '' : notice('error', refused)}
      <form
        method="post"
        action="${editing === null ? '/schedules/create' : '/schedules/update'}"
        class="schedule panel"
        id="schedule-form"
      >
        ${csrfField(viewer)} ${scopeField}
        ${
          editing === null
            ? field('name', 'Name', html`required placeholder="nightly-report"`)
            : html`<input type="hidden" name="name" value="${editing}" />`
        }
        <fieldset>
          <legend>When: a cron expression, or an interval</legend>
          ${field('cron', 'Cron expression', html`placeholder="0 2 * * *"`)}
          ${field('timezone', 'Time zone (for cron)', html`placeholder="UTC"`)}
          ${field('every_secs', 'Or every (seconds)', html`inputmode="numeric" placeholder="3600"`)}
        </fieldset>
        <fieldset>
          <legend>The job it enqueues</legend>
          ${field('kind', 'Kind', html`required placeholder="report.nightly"`)}
          ${field('priority', 'Priority (0-255, lower is sooner)', html`inputmode="numeric" placeholder="100"`)}
          ${field('max_attempts', 'Max attempts', html`inputmode="numeric"`)}
          ${field('timeout_secs', 'Timeout (seconds)', html`inputmode="numeric"`)}
          ${
            binaryPayload
              ? html`<p class="hint wide">The payload is not text; it is kept as it is.</p>`
              : html`<label class="wide"
                  >Payload (text, often JSON)
                  <textarea name="payload" spellcheck="false">${value('payload')}</textarea>
                </label>`
          }
        </fieldset>
        ${
          editing === null
            ? html`<label class="check"
                ><input type="checkbox" name="paused" value="1" ${value('paused') === '' ? '' : html` checked`} />
                Create it paused</label
              >`
            : ''
        }
        <div class="buttons">
          <button class="primary" id="save-schedule">${editing === null ? 'Create schedule' : 'Save'}</button>
          <a class="button subtle" href="/schedules">Back to schedules</a>
        </div>
      </form>`,
  });
}
