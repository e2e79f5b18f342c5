/** The escaping template every dashboard page is built with. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { escapeHtml, href, html, trusted } from '../../src/http/html.ts';

describe('html', () => {
  it('escapes every character that could open markup or leave an attribute', () => {
    assert.equal(
      escapeHtml(`<a href="x" title='y'>&\`</a>`),
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&#96;&lt;/a&gt;',
    );
    assert.equal(
      html`<td title="${'"><script>'}">${'<b>'}</td>`.text,
      '<td title="&quot;&gt;&lt;script&gt;">&lt;b&gt;</td>',
    );
  });

  it('never lets text through as markup, whatever the text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const out = html`<p title="${text}">${text}</p>`.text;
        const inner = out.slice('<p title="'.length, -'</p>'.length);
        assert.ok(!/[<>"'`]/.test(inner.replace('">', '')), out);
        // Unescaping gives the text back: escaping loses nothing.
        const back = (s: string) =>
          s.replace(
            /&lt;|&gt;|&quot;|&#39;|&#96;|&amp;/g,
            (e) => ({ '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'", '&#96;': '`', '&amp;': '&' })[e] ?? e,
          );
        assert.equal(back(inner.split('">')[0] ?? ''), text);
      }),
    );
  });

  it('nests templates and lists without escaping them twice, and drops nothing-values', () => {
    const rows = ['a<', 'b&'].map((x) => html`<li>${x}</li>`);
    // prettier-ignore
    const list = html`<ul>${rows}${null}${undefined}${false}${0}</ul>`;
    assert.equal(list.text, '<ul><li>a&lt;</li><li>b&amp;</li>0</ul>');
    assert.equal(html`${trusted('<br>')}`.text, '<br>');
  });

  it('treats a look-alike object as text, not as markup', () => {
    const forged = { text: '<script>alert(1)</script>' } as unknown as string;
    assert.equal(html`${forged}`.text, '[object Object]');
  });

  it('builds same-site paths with every query value encoded', () => {
    assert.equal(
      href('/jobs', { kind: 'javascript:alert(1)', state: null, tenant: '' }),
      '/jobs?kind=javascript%3Aalert%281%29',
    );
    assert.equal(href('/jobs'), '/jobs');
    assert.equal(href('/jobs', { a: '"><img>' }), '/jobs?a=%22%3E%3Cimg%3E');
  });
});
