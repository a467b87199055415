/**
 * Open WebUI's RAG prompt (config.py DEFAULT_RAG_TEMPLATE, the text since 0.6.x that 0.10.2 ships)
 * and how it is filled (utils/task.py rag_template, utils/middleware.py get_source_context and
 * apply_source_context_to_messages). Kept word for word: models and prompts tuned against Open
 * WebUI see the same context here.
 */
export const DEFAULT_RAG_TEMPLATE = `### Task:
Respond to the user query using the provided context, incorporating inline citations in the format [id] **only when the <source> tag includes an explicit id attribute** (e.g., <source id="1">).

### Guidelines:
- If you don't know the answer, clearly state that.
- If uncertain, ask the user for clarification.
- Respond in the same language as the user's query.
- If the context is unreadable or of poor quality, inform the user and provide the best possible answer.
- If the answer isn't present in the context but you possess the knowledge, explain this to the user and provide the answer using your own understanding.
- **Only include inline citations using [id] (e.g., [1], [2]) when the <source> tag includes an id attribute.**
- Do not cite if the <source> tag does not contain an id attribute.
- Do not use XML tags in your response.
- Ensure citations are concise and directly related to the information provided.

### Example of Citation:
If the user asks about a specific topic and the information is found in a source with a provided id attribute, the response should include the citation like in the following example:
* "According to the study, the proposed method increases efficiency by 20% [1]."

### Output:
Provide a clear and direct response to the user's query, including inline citations in the format [id] only when the <source> tag with id attribute is present in the context.

<context>
{{CONTEXT}}
</context>
`;

/** One entry of Open WebUI's `sources`: the item retrieved for, its chunks, their metadata and scores. */
export interface Source {
  source: Record<string, unknown> & { id?: string; name?: string; type?: string };
  document: string[];
  metadata: Record<string, unknown>[];
  distances?: number[];
}

/**
 * The `<source id="N" name="…">chunk</source>` lines: N numbers distinct citation targets (a
 * chunk's metadata `source`, else its item's id) from 1 in order of appearance, so chunks of one
 * file share a number; the name is the item's name.
 */
export function sourceContext(sources: readonly Source[]): string {
  const ids = new Map<string, number>();
  let out = '';
  for (const s of sources) {
    const name = typeof s.source.name === 'string' && s.source.name ? s.source.name : null;
    s.document.forEach((doc, i) => {
      const meta = s.metadata[i] ?? {};
      const key = String((typeof meta.source === 'string' && meta.source) || s.source.id || 'N/A');
      if (!ids.has(key)) ids.set(key, ids.size + 1);
      out += `<source id="${ids.get(key)}"${name ? ` name="${name}"` : ''}>${doc}</source>\n`;
    });
  }
  return out.trim();
}

/** rag_template: the template (Open WebUI's default when blank) with context and query put in. */
export function ragTemplate(template: string, context: string, query: string): string {
  const t = template.trim() === '' ? DEFAULT_RAG_TEMPLATE : template;
  // Function replacements: a `$&` in a chunk must stay literal text.
  return t
    .replace(/\[context\]|\{\{CONTEXT\}\}/g, () => context)
    .replace(/\[query\]|\{\{QUERY\}\}/g, () => query);
}
