/**
 * Result text in mcp-server-qdrant's format. Its `format_entry` writes the metadata with Python's
 * `json.dumps` defaults (", " and ": " separators, non-ASCII as \uXXXX) and writes nothing when the
 * metadata is missing or empty; the content is written as is.
 */
export function formatEntry(content: string, metadata: unknown): string {
  return `<entry><content>${content}</content><metadata>${isEmpty(metadata) ? '' : pythonJsonDumps(metadata)}</metadata></entry>`;
}

export function formatFindResult(query: string, entries: { content: string; metadata: unknown }[]): string {
  if (entries.length === 0) return noResults(query);
  return [`Results for the query '${query}'`, ...entries.map((e) => formatEntry(e.content, e.metadata))].join('\n');
}

export function noResults(query: string): string {
  return `No information found for the query '${query}'`;
}

// Python's truthiness of the parsed JSON value: None, {}, [], "", 0 and false are all falsy.
function isEmpty(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return true;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === 'object') return Object.keys(v).length === 0;
  return false;
}

/** `json.dumps(value)` with Python's defaults, for JSON-shaped values. */
export function pythonJsonDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return asciiJson(value);
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : value > 0 ? 'Infinity' : value < 0 ? '-Infinity' : 'NaN';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
  if (typeof value === 'object') {
    const parts = Object.entries(value as Record<string, unknown>).map(([k, v]) => `${asciiJson(k)}: ${pythonJsonDumps(v)}`);
    return `{${parts.join(', ')}}`;
  }
  return asciiJson(String(value));
}

// JSON.stringify escapes like Python except that Python (ensure_ascii) also escapes every non-ASCII
// UTF-16 unit, lowercase hex.
function asciiJson(s: string): string {
  return JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
