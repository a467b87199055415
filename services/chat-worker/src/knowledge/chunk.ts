/** One piece of a document's text, with where it sits in the text (character offsets). */
export interface TextChunk {
  index: number;
  content: string;
  start: number;
  end: number;
}

export interface ChunkOptions {
  /** Open WebUI's CHUNK_SIZE (characters): 1000. */
  size: number;
  /** Open WebUI's CHUNK_OVERLAP (characters): 100. */
  overlap: number;
}

/**
 * Split text into chunks of at most `size` characters that overlap by `overlap`, preferring to
 * cut at a paragraph, line, sentence or word boundary (as LangChain's recursive character
 * splitter, which Open WebUI uses, does). Placeholder the search work refines.
 */
export function chunkText(text: string, { size, overlap }: ChunkOptions): TextChunk[] {
  const chunks: TextChunk[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    if (end < text.length) {
      const window = text.slice(start, end);
      const cut = Math.max(window.lastIndexOf('\n\n'), window.lastIndexOf('\n'), window.lastIndexOf('. '), window.lastIndexOf(' '));
      if (cut > size / 2) end = start + cut + 1;
    }
    const content = text.slice(start, end).trim();
    if (content) chunks.push({ index: chunks.length, content, start, end });
    if (end >= text.length) break;
    start = Math.max(end - overlap, start + 1);
  }
  return chunks;
}
