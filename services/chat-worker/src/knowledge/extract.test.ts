import { describe, expect, it } from 'vitest';
import { Document, Packer, Paragraph } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { extractText, ExtractError, kindOf } from './extract.ts';

const enc = (s: string) => new TextEncoder().encode(s);

describe('extractText', () => {
  it('reads text, Markdown, CSV, JSON and source code as they are', async () => {
    for (const [filename, type, body] of [
      ['notes.md', 'text/markdown', '# Title\n\nSome *words*.'],
      ['table.csv', 'text/csv', 'a,b\n1,2\n'],
      ['data.json', 'application/json', '{"k": [1, 2]}'],
      ['main.ts', 'video/mp2t', 'export const x: number = 1;\n'],
      ['script.py', null, 'print("hi")\n'],
    ] as const) {
      expect(await extractText(enc(body), { filename, contentType: type })).toBe(body);
    }
  });

  it('falls back to Latin-1 for text that is not UTF-8, and drops a byte order mark', async () => {
    expect(await extractText(Uint8Array.from([0x63, 0x61, 0x66, 0xe9]), { filename: 'old.txt', contentType: 'text/plain' })).toBe('café');
    expect(await extractText(Uint8Array.from([0xef, 0xbb, 0xbf, 0x68, 0x69]), { filename: 'bom.txt', contentType: 'text/plain' })).toBe('hi');
  });

  it('turns HTML into text without markup, scripts or images', async () => {
    const html = '<html><head><title>T</title><script>var secret = 1;</script></head><body><h1>Harbour</h1><p>Tides <b>rise</b> twice.</p><img src="x.png" alt="pic"></body></html>';
    const text = await extractText(enc(html), { filename: 'page.html', contentType: 'text/html' });
    expect(text).toContain('HARBOUR');
    expect(text).toContain('Tides rise twice.');
    expect(text).not.toMatch(/<|secret|x\.png/);
  });

  it('extracts every page of a PDF, in order', async () => {
    const doc = await PDFDocument.create();
    const font = await doc.embedFont(StandardFonts.Helvetica);
    doc.addPage().drawText('First page lighthouse', { x: 40, y: 700, font, size: 12 });
    doc.addPage().drawText('Second page harbour', { x: 40, y: 700, font, size: 12 });
    const text = await extractText(await doc.save(), { filename: 'two.pdf', contentType: 'application/pdf' });
    expect(text.indexOf('First page lighthouse')).toBeGreaterThanOrEqual(0);
    expect(text.indexOf('Second page harbour')).toBeGreaterThan(text.indexOf('First page lighthouse'));
  });

  it('extracts the paragraphs of a DOCX', async () => {
    const bytes = await Packer.toBuffer(new Document({ sections: [{ children: [new Paragraph('Alpha paragraph'), new Paragraph('Beta paragraph')] }] }));
    const text = await extractText(bytes, { filename: 'doc.docx', contentType: null });
    expect(text).toMatch(/Alpha paragraph\s+Beta paragraph/);
  });

  it('refuses a corrupt PDF, a corrupt DOCX and binary files with a reason', async () => {
    await expect(extractText(enc('%PDF-1.4 nothing here'), { filename: 'x.pdf', contentType: 'application/pdf' })).rejects.toThrow(/^Could not read the PDF: /);
    await expect(extractText(enc('PK not a zip'), { filename: 'x.docx', contentType: null })).rejects.toThrow(/^Could not read the DOCX document: /);
    const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]);
    await expect(extractText(png, { filename: 'p.png', contentType: 'image/png' })).rejects.toThrow(new ExtractError('File type image/png is not supported for processing'));
    await expect(extractText(Uint8Array.from([1, 0, 2]), { filename: 'blob', contentType: null })).rejects.toBeInstanceOf(ExtractError);
  });
});

describe('kindOf', () => {
  it('goes by type, then extension, then a look at the bytes', () => {
    expect(kindOf({ filename: 'a', contentType: 'application/pdf' }, enc(''))).toBe('pdf');
    expect(kindOf({ filename: 'a.PDF', contentType: 'application/octet-stream' }, enc(''))).toBe('pdf');
    expect(kindOf({ filename: 'a.htm', contentType: null }, enc(''))).toBe('html');
    expect(kindOf({ filename: 'a.unknown', contentType: 'application/octet-stream' }, enc('plain words'))).toBe('text');
    expect(kindOf({ filename: 'a.unknown', contentType: 'application/octet-stream' }, Uint8Array.from([0, 1]))).toBeNull();
  });
});
