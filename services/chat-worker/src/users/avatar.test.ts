import { describe, expect, it } from 'vitest';
import { avatarFromDataUrl, DEFAULT_AVATAR } from './avatar.ts';

describe('avatarFromDataUrl', () => {
  const png = Buffer.from('89504e470d0a1a0a', 'hex');

  it('decodes an uploaded raster picture, with its type and extension', () => {
    expect(avatarFromDataUrl(`data:image/png;base64,${png.toString('base64')}`)).toEqual({ bytes: png, contentType: 'image/png', ext: 'png' });
    expect(avatarFromDataUrl(`data:IMAGE/JPEG;base64,${png.toString('base64')}`)).toMatchObject({ contentType: 'image/jpeg', ext: 'jpg' });
    // Line breaks inside the base64 (some encoders wrap it) are dropped.
    const wrapped = png.toString('base64').replace(/(.{4})/g, '$1\n');
    expect(avatarFromDataUrl(`data:image/webp;base64,${wrapped}`)?.bytes).toEqual(png);
  });

  it('serves nothing else: SVG, other types, plain paths, outside URLs, empty or malformed data', () => {
    const svg = Buffer.from('<svg onload="alert(1)"/>').toString('base64');
    for (const url of [
      `data:image/svg+xml;base64,${svg}`,
      `data:text/html;base64,${svg}`,
      'data:image/png,rawbytes',
      'data:image/png;base64,',
      'data:image/png;base64,@@@',
      '/user.png',
      'https://example.com/me.png',
      '',
    ]) {
      expect(avatarFromDataUrl(url), url).toBeUndefined();
    }
  });

  it('has a default that is an SVG without script', () => {
    const text = DEFAULT_AVATAR.toString();
    expect(text).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(text).not.toMatch(/script|on[a-z]+=/i);
  });
});
