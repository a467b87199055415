import { extname } from 'node:path';
import { convert as htmlToText } from 'html-to-text';
import mammoth from 'mammoth';
import { extractText as pdfText, getDocumentProxy } from 'unpdf';

/**
 * Text out of an uploaded file, by its type: plain text, Markdown, CSV, JSON, XML, source code
 * (decoded as UTF-8, Latin-1 when that fails, as Open WebUI's text loader falls back), HTML (to
 * text), PDF (unpdf, pdf.js without native parts) and DOCX (mammoth). A file that is none of these,
 * or that its parser cannot read, throws ExtractError with the reason the file's `data.error` shows.
 */
export class ExtractError extends Error {}

export interface ExtractInput {
  filename: string;
  contentType: string | null;
}

export type Kind = 'pdf' | 'docx' | 'html' | 'text';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const TEXT_TYPES = new Set(['application/json', 'application/xml', 'application/javascript', 'application/x-javascript', 'application/typescript', 'application/x-sh', 'application/x-yaml', 'application/yaml', 'application/toml', 'application/sql', 'application/x-python', 'application/csv', 'application/x-ndjson']);
/** Extensions read as text whatever type the browser guessed (.ts is video/mp2t to most of them). */
const TEXT_EXTENSIONS = new Set(
  'txt md markdown mdx rst csv tsv json jsonl ndjson yaml yml toml ini cfg conf env log xml svg tex sql sh bash zsh ps1 bat py pyi rb php pl lua r go rs java kt kts scala swift c h cc cpp hpp cs m mm js mjs cjs jsx ts tsx vue svelte css scss less dart ex exs erl hs clj elm nim zig sol proto graphql gql dockerfile makefile gradle'.split(' '),
);

/** Which parser a file goes to, or null when none can read it. */
export function kindOf({ filename, contentType }: ExtractInput, head: Uint8Array): Kind | null {
  const ext = extname(filename).slice(1).toLowerCase();
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/pdf' || ext === 'pdf') return 'pdf';
  if (type === DOCX || ext === 'docx') return 'docx';
  if (type === 'text/html' || type === 'application/xhtml+xml' || ext === 'html' || ext === 'htm') return 'html';
  if (type.startsWith('text/') || TEXT_TYPES.has(type) || type.endsWith('+json') || type.endsWith('+xml') || TEXT_EXTENSIONS.has(ext)) return 'text';
  // Unknown or mislabelled (octet-stream, video/mp2t…): text if it looks like text, as Open WebUI checks.
  return looksLikeText(head) ? 'text' : null;
}

/** No NUL byte in the first 8 KB (a strong sign of binary) and not empty. */
export function looksLikeText(head: Uint8Array): boolean {
  const sample = head.subarray(0, 8192);
  return sample.length > 0 && !sample.includes(0);
}

export async function extractText(bytes: Uint8Array, input: ExtractInput): Promise<string> {
  const kind = kindOf(input, bytes);
  if (!kind) throw new ExtractError(`File type ${input.contentType || extname(input.filename) || 'unknown'} is not supported for processing`);
  switch (kind) {
    case 'pdf':
      return pdf(bytes);
    case 'docx':
      return docx(bytes);
    case 'html':
      return htmlToText(decode(bytes), { wordwrap: false, selectors: [{ selector: 'img', format: 'skip' }] });
    case 'text':
      return decode(bytes);
  }
}

function decode(bytes: Uint8Array): string {
  // A UTF-8 byte order mark is not text.
  const body = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return new TextDecoder('latin1').decode(body);
  }
}

async function pdf(bytes: Uint8Array): Promise<string> {
  let doc;
  try {
    // pdf.js takes ownership of the buffer it is given: hand it a copy. Errors only: its warnings about a damaged file would flood the log.
    doc = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  } catch (err) {
    throw new ExtractError(`Could not read the PDF: ${(err as Error).message}`);
  }
  try {
    const { text } = await pdfText(doc, { mergePages: false });
    return (text as string[]).join('\n\n');
  } catch (err) {
    throw new ExtractError(`Could not read the PDF: ${(err as Error).message}`);
  } finally {
    await doc.destroy().catch(() => undefined);
  }
}

async function docx(bytes: Uint8Array): Promise<string> {
  try {
    const { value } = await mammoth.extractRawText({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
    return value;
  } catch (err) {
    throw new ExtractError(`Could not read the DOCX document: ${(err as Error).message}`);
  }
}
