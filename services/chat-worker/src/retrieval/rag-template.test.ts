import { describe, expect, it } from 'vitest';
import { DEFAULT_RAG_TEMPLATE, ragTemplate, sourceContext, type Source } from './rag-template.ts';
import { ragItems, withRagContext } from './rag.ts';

const src = (name: string | undefined, id: string, docs: [string, string | undefined][]): Source => ({
  source: { type: 'collection', id, ...(name ? { name } : {}) },
  document: docs.map(([d]) => d),
  metadata: docs.map(([, file]) => (file ? { source: file } : {})),
});

describe('RAG context (Open WebUI get_source_context and rag_template)', () => {
  it('numbers distinct citation targets from 1, chunks of one file sharing a number, names from the item', () => {
    const ctx = sourceContext([
      src('Notes', 'kb1', [
        ['a1', 'a.txt'],
        ['b1', 'b.txt'],
        ['a2', 'a.txt'],
      ]),
      src(undefined, 'kb2', [['loose', undefined]]),
    ]);
    expect(ctx).toBe('<source id="1" name="Notes">a1</source>\n<source id="2" name="Notes">b1</source>\n<source id="1" name="Notes">a2</source>\n<source id="3">loose</source>');
  });

  it('fills the default template when the setting is blank, and keeps $-patterns in chunks literal', () => {
    const out = ragTemplate('  ', 'price: $& and $1', 'q');
    expect(out).toBe(DEFAULT_RAG_TEMPLATE.replace('{{CONTEXT}}', () => 'price: $& and $1'));
    expect(out.startsWith('### Task:\nRespond to the user query using the provided context')).toBe(true);
    expect(out.endsWith('<context>\nprice: $& and $1\n</context>\n')).toBe(true);
    expect(ragTemplate('C=[context] Q=[query] / {{CONTEXT}} {{QUERY}}', 'ctx', 'why')).toBe('C=ctx Q=why / ctx why');
  });

  it('puts the context before the last user message (text blocks included), or adds a user message', () => {
    const sources = [src('N', 'k', [['chunk', 'f']])];
    const filled = ragTemplate('', '<source id="1" name="N">chunk</source>', 'q');
    expect(withRagContext([{ role: 'system', content: 's' }, { role: 'user', content: 'q' }], sources, '', 'q')).toEqual([
      { role: 'system', content: 's' },
      { role: 'user', content: `${filled}\nq` },
    ]);
    const blocks = withRagContext([{ role: 'user', content: [{ type: 'text', text: 'q' }, { type: 'image_url', image_url: { url: 'x' } }] }], sources, '', 'q');
    expect(blocks[0]!.content).toEqual([{ type: 'text', text: `${filled}\nq` }, { type: 'image_url', image_url: { url: 'x' } }]);
    expect(withRagContext([{ role: 'user', content: 'q' }, { role: 'tool', content: 'r' }], sources, '', 'q').at(-1)).toEqual({ role: 'user', content: filled });
    // RAG_SYSTEM_CONTEXT: after the system prompt (append), or as the leading system message.
    expect(withRagContext([{ role: 'system', content: 's' }, { role: 'user', content: 'q' }], sources, '', 'q', true)).toEqual([
      { role: 'system', content: `s\n${filled}` },
      { role: 'user', content: 'q' },
    ]);
    expect(withRagContext([{ role: 'user', content: 'q' }], sources, '', 'q', true)).toEqual([{ role: 'system', content: filled }, { role: 'user', content: 'q' }]);
    // Nothing retrieved, nothing changed.
    expect(withRagContext([{ role: 'user', content: 'q' }], [], '', 'q')).toEqual([{ role: 'user', content: 'q' }]);
  });

  it('reads files, else metadata.files, keeping only collection and file items', () => {
    expect(ragItems({})).toEqual([]);
    expect(ragItems({ files: null, metadata: { files: [{ type: 'collection', id: 'k' }] } })).toEqual([{ type: 'collection', id: 'k' }]);
    expect(ragItems({ files: [{ type: 'image', url: 'x' }, { type: 'file', id: 'f', name: 'a.txt' }] })).toEqual([{ type: 'file', id: 'f', name: 'a.txt' }]);
    expect(ragItems({ files: [{ type: 'collection', id: 'k', name: 'A' }, { type: 'collection', id: 'k' }, { type: 'file', id: 'k' }] })).toEqual([
      { type: 'collection', id: 'k', name: 'A' },
      { type: 'file', id: 'k' },
    ]);
    expect(() => ragItems({ files: {} })).toThrow(/files must be a list/);
    expect(() => ragItems({ files: [{ type: 'collection' }] })).toThrow(/needs a string id/);
  });
});
