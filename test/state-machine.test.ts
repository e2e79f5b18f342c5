import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { TRANSITIONS } from '../src/core/transitions.ts';

const doc = readFileSync(new URL('../docs/state-machine.md', import.meta.url), 'utf8');
const diagram = /```mermaid\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';

describe('the state machine document', () => {
  for (const edge of TRANSITIONS) {
    it(`draws ${edge.name}: ${edge.from} to ${edge.to}`, () => {
      const from = edge.from === 'start' ? '[*]' : edge.from;
      assert.ok(
        diagram.includes(`${from} --> ${edge.to}: ${edge.name}`),
        `missing "${from} --> ${edge.to}: ${edge.name}"`,
      );
    });
  }

  it('draws no edge the table lacks', () => {
    const drawn = diagram.split('\n').filter((line) => line.includes('-->') && line.includes(':'));
    assert.equal(drawn.length, TRANSITIONS.length);
  });
});
