/**
 * Qdrant payload key paths (`JsonPath`): `a.b`, `a[].b` (every element), `a[0].b`, and quoted
 * keys `a."b.c"`. Used by the payload selectors (`with_payload: {include|exclude}`), the `key`
 * option of set-payload, delete-payload keys, and the `points` count of `payload_schema`.
 * Traversal is strict, as in Qdrant (and filter-sql.ts): `.key` reads objects only, `[]` / `[n]`
 * arrays only, so `a.b` does not look inside an array `a` (write `a[].b`).
 */
import { QdrantError } from '../errors.ts';

export type PathSegment = { key: string } | { index: number } | { all: true };

function badPath(path: string): QdrantError {
  return new QdrantError(400, `Wrong input: Invalid JSON path: ${path}`);
}

export function parseKeyPath(path: string): PathSegment[] {
  const segs: PathSegment[] = [];
  let i = 0;
  const readKey = (): string => {
    if (path[i] === '"') {
      let out = '';
      i++;
      while (i < path.length && path[i] !== '"') {
        if (path[i] === '\\' && i + 1 < path.length) i++;
        out += path[i];
        i++;
      }
      if (path[i] !== '"') throw badPath(path);
      i++;
      return out;
    }
    const start = i;
    while (i < path.length && path[i] !== '.' && path[i] !== '[') i++;
    if (i === start) throw badPath(path);
    return path.slice(start, i);
  };
  segs.push({ key: readKey() });
  while (i < path.length) {
    const c = path[i];
    if (c === '.') {
      i++;
      segs.push({ key: readKey() });
    } else if (c === '[') {
      const end = path.indexOf(']', i);
      if (end < 0) throw badPath(path);
      const inner = path.slice(i + 1, end);
      if (inner === '') segs.push({ all: true });
      else if (/^[0-9]+$/.test(inner)) segs.push({ index: Number(inner) });
      else throw badPath(path);
      i = end + 1;
    } else throw badPath(path);
  }
  return segs;
}

/** SQL/JSON path text (lax mode) for a key path, e.g. `a[].b` → `$."a"[*]."b"`. Passed as a value. */
export function toJsonPathText(path: string): string {
  let out = '$';
  for (const seg of parseKeyPath(path)) {
    if ('key' in seg) out += `.${JSON.stringify(seg.key)}`;
    else if ('index' in seg) out += `[${seg.index}]`;
    else out += '[*]';
  }
  return out;
}

type Json = unknown;
const isObject = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The part of `value` at `segs`, keeping the surrounding structure; undefined when absent. */
function project(value: Json, segs: PathSegment[]): Json {
  const [seg, ...rest] = segs;
  if (!seg) return value;
  if ('key' in seg) {
    if (!isObject(value) || !(seg.key in value)) return undefined;
    const inner = project(value[seg.key], rest);
    return inner === undefined ? undefined : { [seg.key]: inner };
  }
  if (!Array.isArray(value)) return undefined;
  if ('index' in seg) {
    const inner = value[seg.index] === undefined ? undefined : project(value[seg.index], rest);
    return inner === undefined ? undefined : [inner];
  }
  const items = value.map((v) => project(v, rest)).filter((v) => v !== undefined);
  return items.length ? items : undefined;
}

/** Deep merge of two projections of the same payload. */
function merge(a: Json, b: Json): Json {
  if (isObject(a) && isObject(b)) {
    const out: Record<string, Json> = { ...a };
    for (const [k, v] of Object.entries(b)) out[k] = k in out ? merge(out[k], v) : v;
    return out;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) return a.map((v, i) => merge(v, b[i]));
  return b;
}

/** `with_payload: {include: [...]}` (or a list of keys). */
export function includePaths(payload: Record<string, Json>, paths: readonly string[]): Record<string, Json> {
  let out: Json = {};
  for (const p of paths) {
    const part = project(payload, parseKeyPath(p));
    if (part !== undefined) out = merge(out, part);
  }
  return isObject(out) ? out : {};
}

/** Remove the value(s) at `segs` in place. */
function removeAt(value: Json, segs: PathSegment[]): void {
  const [seg, ...rest] = segs;
  if (!seg) return;
  if ('key' in seg) {
    if (!isObject(value) || !(seg.key in value)) return;
    if (rest.length === 0) delete value[seg.key];
    else removeAt(value[seg.key], rest);
    return;
  }
  if (!Array.isArray(value)) return;
  if ('index' in seg) {
    if (seg.index >= value.length) return;
    if (rest.length === 0) value.splice(seg.index, 1);
    else removeAt(value[seg.index], rest);
    return;
  }
  if (rest.length === 0) value.length = 0;
  else for (const v of value) removeAt(v, rest);
}

/** `with_payload: {exclude: [...]}` and delete-payload `keys`: a copy without those paths. */
export function excludePaths(payload: Record<string, Json>, paths: readonly string[]): Record<string, Json> {
  const copy = structuredClone(payload);
  for (const p of paths) removeAt(copy, parseKeyPath(p));
  return copy;
}

/**
 * Set-payload with `key`: merge `patch` (top-level keys replace) into the object(s) at `path`,
 * creating missing objects on the way; a non-object found there is replaced by `patch`. With
 * `replace` (overwrite-payload with `key`) the value at `path` becomes `patch`.
 * Returns the new payload (the input is not modified).
 */
export function mergeAtPath(
  payload: Record<string, Json>,
  path: string,
  patch: Record<string, Json>,
  replace = false,
): Record<string, Json> {
  const copy = structuredClone(payload);
  const segs = parseKeyPath(path);
  const combine = (current: Json): Json =>
    !replace && isObject(current) ? { ...current, ...structuredClone(patch) } : structuredClone(patch);
  const apply = (container: Json, rest: PathSegment[]): void => {
    const [seg, ...tail] = rest;
    if (!seg) return;
    if ('key' in seg) {
      if (!isObject(container)) return;
      if (tail.length === 0) {
        container[seg.key] = combine(container[seg.key]);
        return;
      }
      const next = tail[0]!;
      if (!(seg.key in container) || container[seg.key] === null || typeof container[seg.key] !== 'object') {
        if ('key' in next) container[seg.key] = {};
        else return; // no array to index into
      }
      apply(container[seg.key], tail);
      return;
    }
    if (!Array.isArray(container)) return;
    const targets = 'index' in seg ? (seg.index < container.length ? [seg.index] : []) : container.map((_, i) => i);
    for (const i of targets) {
      if (tail.length === 0) container[i] = combine(container[i]);
      else apply(container[i], tail);
    }
  };
  apply(copy, segs);
  return copy;
}
