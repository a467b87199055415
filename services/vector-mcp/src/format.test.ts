import { describe, expect, it } from 'vitest';
import { formatEntry, formatFindResult, pythonJsonDumps } from './format.ts';

describe('result format (mcp-server-qdrant)', () => {
  it('writes metadata like Python json.dumps', () => {
    expect(pythonJsonDumps({ a: 1, b: [1, 2.5, 'x'], c: { d: null, e: true } })).toBe(
      '{"a": 1, "b": [1, 2.5, "x"], "c": {"d": null, "e": true}}',
    );
    expect(pythonJsonDumps({ city: 'Zürich', emoji: '🙂', ctl: '\u0001\n\u007f' })).toBe(
      '{"city": "Z\\u00fcrich", "emoji": "\\ud83d\\ude42", "ctl": "\\u0001\\n\\u007f"}',
    );
    expect(pythonJsonDumps([])).toBe('[]');
    expect(pythonJsonDumps({})).toBe('{}');
  });

  it('leaves the metadata tag empty when metadata is missing or empty', () => {
    expect(formatEntry('text', null)).toBe('<entry><content>text</content><metadata></metadata></entry>');
    expect(formatEntry('text', undefined)).toBe('<entry><content>text</content><metadata></metadata></entry>');
    expect(formatEntry('text', {})).toBe('<entry><content>text</content><metadata></metadata></entry>');
    expect(formatEntry('a < b', { k: 'v' })).toBe('<entry><content>a < b</content><metadata>{"k": "v"}</metadata></entry>');
  });

  it('puts a header line before the entries, or says nothing was found', () => {
    expect(formatFindResult('q', [{ content: 'one', metadata: null }, { content: 'two', metadata: { n: 2 } }])).toBe(
      "Results for the query 'q'\n" +
        '<entry><content>one</content><metadata></metadata></entry>\n' +
        '<entry><content>two</content><metadata>{"n": 2}</metadata></entry>',
    );
    expect(formatFindResult('q', [])).toBe("No information found for the query 'q'");
  });
});
