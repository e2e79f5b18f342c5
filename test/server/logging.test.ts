/**
 * The server's JSON log lines, read raw: a line that repeats a key parses (JSON.parse keeps the
 * last value) but is ambiguous to every other reader, so each key must appear once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PeriodicService } from '../../src/engine/periodic.ts';
import { createLogger } from '../../src/serve/logging.ts';

/** The top-level keys of a JSON object's text, in order, repeats included. */
function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let at = 0; at < line.length; at++) {
    const char = line[at];
    if (char === '"') {
      const end = stringEnd(line, at);
      if (depth === 1 && expectKey) keys.push(JSON.parse(line.slice(at, end + 1)) as string);
      expectKey = false;
      at = end;
    } else if (char === '{' || char === '[') {
      depth++;
      expectKey = depth === 1;
    } else if (char === '}' || char === ']') {
      depth--;
    } else if (char === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return keys;
}

/** Where the JSON string starting at `start` (its opening quote) ends. */
function stringEnd(text: string, start: number): number {
  for (let at = start + 1; at < text.length; at++) {
    if (text[at] === '\\') at++;
    else if (text[at] === '"') return at;
  }
  throw new Error(`unterminated string at ${start}`);
}

/** A logger writing JSON lines into an array. */
function collectingLogger(): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({ pretty: false, level: 'info', destination: { write: (text) => lines.push(text) } });
  return { logger, lines };
}

describe('JSON log lines', () => {
  it('name a background service once, by its own name, when its pass fails', async () => {
    const { logger, lines } = collectingLogger();
    const reaper = new PeriodicService('reaper', 60_000, () => Promise.reject(new Error('disk gone')), logger);
    await reaper.runOnce();
    assert.equal(lines.length, 1);
    const line = lines[0] ?? '';
    const keys = topLevelKeys(line);
    assert.deepEqual(
      keys.filter((key, i) => keys.indexOf(key) !== i),
      [],
      `a key appears twice in ${line}`,
    );
    const fields = JSON.parse(line) as Record<string, unknown>;
    assert.equal(fields['service'], 'reaper');
    assert.equal(fields['name'], 'telha');
    assert.equal(fields['msg'], 'background pass failed');
  });

  it('read a repeated key as repeated (the check above can fail)', () => {
    assert.deepEqual(topLevelKeys('{"service":"telha","a":{"service":1},"service":"reaper"}'), [
      'service',
      'a',
      'service',
    ]);
  });
});
