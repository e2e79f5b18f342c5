/**
 * The proto is the single source of truth for every client: what the server sends in metadata
 * is named there, where a client author looks for it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { EVENT_TRANSITIONS } from '../../src/core/types.ts';
import { TELHA_REASONS } from '../../src/edge/status.ts';
import { REASON_HEADER } from '../../src/wire/service.ts';

const proto = readFileSync(new URL('../../proto/telha/v1/queue.proto', import.meta.url), 'utf8');

/** The text from the line holding `start` up to (not including) the next line holding `end`. */
function section(start: RegExp, end: RegExp): string {
  const lines = proto.split('\n');
  const from = lines.findIndex((line) => start.test(line));
  assert.ok(from >= 0, `no line matches ${start}`);
  const to = lines.findIndex((line, i) => i > from && end.test(line));
  assert.ok(to > from, `no line after ${start} matches ${end}`);
  return lines.slice(from, to).join('\n');
}

/** The comment lines right above a field's declaration in a message. */
function fieldComment(message: string, field: RegExp): string {
  const body = section(new RegExp(`^message ${message} \\{`), /^\}/).split('\n');
  const at = body.findIndex((line) => field.test(line));
  assert.ok(at > 0, `no field ${field} in ${message}`);
  let from = at;
  while (from > 0 && /^\s*\/\//.test(body[from - 1] ?? '')) from--;
  return body.slice(from, at).join('\n');
}

describe('the proto text', () => {
  const aborted = section(/^\/\/ {3}ABORTED /, /^\/\/ {3}NOT_FOUND /);
  const outcomeReason = fieldComment('ItemOutcome', /^\s*string reason = \d+;/);

  it(`says ABORTED carries ${REASON_HEADER}`, () => {
    assert.match(aborted, new RegExp(`\`${REASON_HEADER}\``));
  });

  for (const reason of TELHA_REASONS) {
    it(`names the reason ${reason} under ABORTED and in ItemOutcome.reason`, () => {
      assert.match(aborted, new RegExp(`\\b${reason}\\b`));
      assert.match(outcomeReason, new RegExp(`\\b${reason}\\b`));
    });
  }

  it('names every event a job records in JobEvent.transition', () => {
    const transition = fieldComment('JobEvent', /^\s*string transition = \d+;/);
    for (const event of EVENT_TRANSITIONS) assert.match(transition, new RegExp(`\\b${event}\\b`), event);
  });

  it('names PostgreSQL out of reach among the causes of UNAVAILABLE', () => {
    assert.match(section(/^\/\/ {3}UNAVAILABLE /, /^\/\/ {3}[A-Z_]+ /), /PostgreSQL cannot be reached/);
  });
});
