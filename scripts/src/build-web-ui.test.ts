import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { compressAssets, sourceHash } from './build-web-ui.ts';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-assets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('build-web-ui: the post-build step', () => {
  it('writes a .br and a .gz that decompress to each compressible asset; a small chunk too; what does not shrink and binary files are left alone', () => {
    const js = `export const x = ${JSON.stringify('gatehouse '.repeat(500))};\n`;
    mkdirSync(join(dir, 'nested'));
    writeFileSync(join(dir, 'index-abc.js'), js);
    writeFileSync(join(dir, 'nested', 'style-def.css'), `body{color:red}\n`.repeat(200));
    writeFileSync(join(dir, 'tiny-123.js'), 'export{}');
    // A few hundred bytes, as the bundler splits out of two lazy pages: still sent compressed.
    const small = `import{a as t}from"./index-abc.js";export const f=(e)=>t("/api/v1/configs/"+e,{method:"GET"}),g=(e,o)=>t("/api/v1/configs/"+e,{method:"POST",body:JSON.stringify(o)});\n`.repeat(3);
    writeFileSync(join(dir, 'configs-789.js'), small);
    writeFileSync(join(dir, 'logo-456.png'), Buffer.alloc(4096, 7));
    expect(compressAssets(dir)).toBe(3);
    expect(small.length).toBeLessThan(1024);
    expect(brotliDecompressSync(readFileSync(join(dir, 'configs-789.js.br'))).toString()).toBe(small);
    expect(brotliDecompressSync(readFileSync(join(dir, 'index-abc.js.br'))).toString()).toBe(js);
    expect(gunzipSync(readFileSync(join(dir, 'index-abc.js.gz'))).toString()).toBe(js);
    expect(readdirSync(join(dir, 'nested')).sort()).toEqual(['style-def.css', 'style-def.css.br', 'style-def.css.gz']);
    expect(readdirSync(dir).filter((f) => f.startsWith('tiny') || f.startsWith('logo')).sort()).toEqual(['logo-456.png', 'tiny-123.js']);
  });

  it("the sources' hash is stable between calls (a stamp that matches means no rebuild)", () => {
    expect(sourceHash()).toMatch(/^[0-9a-f]{64}$/);
    expect(sourceHash()).toBe(sourceHash());
  });
});
