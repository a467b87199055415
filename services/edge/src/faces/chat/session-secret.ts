import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The session signing secret, as Open WebUI finds it: WEBUI_SECRET_KEY when set, else a key
 * generated on first start (WEBUI_SECRET_KEY_LENGTH random bytes, base64) and kept in a file so
 * sessions survive restarts. Edges sharing the file (or the variable) accept each other's tokens.
 * The file is created exclusively (two edges starting together agree on one key) with mode 0600.
 */
export function loadSessionSecret(opts: { value?: string; file: string; length: number }): { secret: string; source: 'env' | 'file' | 'generated' } {
  if (opts.value) return { secret: opts.value, source: 'env' };
  mkdirSync(dirname(opts.file), { recursive: true });
  try {
    const fd = openSync(opts.file, 'wx', 0o600);
    const secret = randomBytes(opts.length).toString('base64');
    writeSync(fd, secret);
    closeSync(fd);
    return { secret, source: 'generated' };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  // The creator may still be writing: read until the key is there (it is written in one call).
  for (let i = 0; i < 50; i++) {
    const secret = readFileSync(opts.file, 'utf8').trim();
    if (secret) return { secret, source: 'file' };
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
  throw new Error(`${opts.file} is empty; delete it to have a new session secret generated`);
}
