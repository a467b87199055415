/**
 * Qdrant's payload key grammar (`json_path/`): `a.b`, `"quoted key".c` (quotes allow `.`, spaces,
 * `[`…; a key containing `"` or `\` cannot be written), `arr[]` (every element), `arr[3]` (one
 * element). Traversal is strict: `.key` reads only objects, `[]`/`[n]` only arrays, so `a.b` does
 * NOT look inside an array `a` (write `a[].b`). Postgres lax-mode JSONPath does not give this (it
 * unwraps arrays at every step and wraps scalars for `[*]`), so keys compile to a strict-mode
 * JSONPath whose every step is guarded (`strict $ ? (@.type() == "object" && exists(@."k"))."k"
 * ? (@.type() == "array")[*] …`), with each key as a quoted JSONPath string literal.
 */
export type PathItem = { key: string } | { index: number } | { wildcard: true };

const RAW_CHAR = /[\p{Alphabetic}\p{N}_-]/u;

/** Parse a Qdrant payload key (`a.b[].c`, `"x.y"[0]`); null when it is not a valid path. */
export function parseKeyPath(key: string): PathItem[] | null {
  const items: PathItem[] = [];
  const chars = [...key];
  let i = 0;
  const readKey = (): string | null => {
    if (chars[i] === '"') {
      let j = i + 1;
      let out = '';
      while (j < chars.length && chars[j] !== '"') {
        if (chars[j] === '\\') return null;
        out += chars[j];
        j++;
      }
      if (j >= chars.length) return null;
      i = j + 1;
      return out;
    }
    let out = '';
    while (i < chars.length && RAW_CHAR.test(chars[i]!)) out += chars[i++];
    return out.length > 0 ? out : null;
  };
  const first = readKey();
  if (first === null) return null;
  items.push({ key: first });
  while (i < chars.length) {
    const c = chars[i];
    if (c === '.') {
      i++;
      const k = readKey();
      if (k === null) return null;
      items.push({ key: k });
    } else if (c === '[') {
      if (chars[i + 1] === ']') {
        items.push({ wildcard: true });
        i += 2;
        continue;
      }
      let j = i + 1;
      let digits = '';
      while (j < chars.length && /[0-9]/.test(chars[j]!)) digits += chars[j++];
      if (digits === '' || chars[j] !== ']') return null;
      const n = Number(digits);
      if (!Number.isSafeInteger(n)) return null;
      items.push({ index: n });
      i = j + 1;
    } else {
      return null;
    }
  }
  return items;
}

function jsonPathString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (cp < 0x20 || cp === 0x7f) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Strict-mode JSONPath reaching exactly the values Qdrant's `value_get` reaches. */
export function strictJsonPath(items: readonly PathItem[]): string {
  let p = 'strict $';
  for (const it of items) {
    if ('key' in it) {
      const k = jsonPathString(it.key);
      p += ` ? (@.type() == "object" && exists(@.${k})).${k}`;
    } else if ('index' in it) {
      p += ` ? (@.type() == "array" && @.size() > ${it.index})[${it.index}]`;
    } else {
      p += ' ? (@.type() == "array")[*]';
    }
  }
  return p;
}
