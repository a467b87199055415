/**
 * The building blocks of the Qdrant body schemas (qdrant.ts): serde-style issue messages, typed
 * primitives, untagged and externally tagged unions, point ids, and the ZodError → Qdrant status
 * and message mapping. Exported for the schema files beside it; the package exports only the
 * names qdrant.ts re-exports.
 */
import { z } from 'zod';

// ------------------------------------------------------------------------------------------------
// Issue kinds and serde-style messages

export const FORMAT = { qdrant: 'format' } as const;
export const VALIDATION = { qdrant: 'validation' } as const;
/** Message of an issue for an absent required field; qdrantBodyError names the field. */
export const MISSING = 'missing field';

export type RawIssue = { input?: unknown };

/** serde's `Unexpected` description of a JSON value. */
export function unexpected(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return `boolean \`${v}\``;
  if (typeof v === 'number') return Number.isInteger(v) ? `integer \`${v}\`` : `floating point \`${v}\``;
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  if (Array.isArray(v)) return 'a sequence';
  return 'a map';
}

export const serdeType =
  (expected: string) =>
  (iss: RawIssue): string =>
    iss.input === undefined ? MISSING : `invalid type: ${unexpected(iss.input)}, expected ${expected}`;

export function formatIssue(ctx: z.RefinementCtx, message: string): void {
  ctx.addIssue({ code: 'custom', message, params: FORMAT });
}
export function validationIssue(ctx: z.RefinementCtx, message: string, path?: PropertyKey[]): void {
  ctx.addIssue({ code: 'custom', message, params: VALIDATION, ...(path ? { path } : {}) });
}

export function isValidationIssue(issue: z.core.$ZodIssue): boolean {
  if (issue.code === 'custom') return (issue.params as { qdrant?: string } | undefined)?.qdrant === 'validation';
  return issue.code === 'too_small' || issue.code === 'too_big';
}

/** Copy a nested parse's issues into the current context (paths stay relative). */
export function forwardIssues(ctx: z.RefinementCtx, error: z.ZodError): void {
  for (const issue of error.issues) {
    ctx.addIssue({
      code: 'custom',
      message: issue.message,
      path: issue.path as PropertyKey[],
      params: isValidationIssue(issue) ? VALIDATION : FORMAT,
    });
  }
}

// ------------------------------------------------------------------------------------------------
// Building blocks

export const str = () => z.string({ error: serdeType('a string') });
export const bool = () => z.boolean({ error: serdeType('a boolean') });
export const f64 = () => z.number({ error: serdeType('f64') });
export const obj = <S extends z.ZodRawShape>(shape: S) => z.looseObject(shape, { error: serdeType('a map') });
export const list = <T extends z.ZodType>(item: T) => z.array(item, { error: serdeType('a sequence') });
export const map = <T extends z.ZodType>(value: T) => z.record(z.string(), value, { error: serdeType('a map') });
export const json = () => z.unknown();
export const payloadObject = () => z.record(z.string(), z.unknown(), { error: serdeType('a map') });

/**
 * An unsigned integer. Above 2^53 it is read as the nearest double, so u64::MAX (which rounds to
 * 2^64) is accepted; callers clamp it.
 */
export const uint = (expected = 'u64') =>
  // The vector face parses integers above 2^53 exactly (a BigInt, for point ids); a count or a
  // limit that large means "no limit" to every caller here, so it is read as the nearest double.
  z.preprocess(
    (v) => (typeof v === 'bigint' ? Number(v) : v),
    z.number({ error: serdeType(expected) }).superRefine((v, ctx) => {
      if (!Number.isInteger(v)) formatIssue(ctx, `invalid type: floating point \`${v}\`, expected ${expected}`);
      else if (v < 0 || v > 2 ** 64) formatIssue(ctx, `invalid value: integer \`${v}\`, expected ${expected}`);
    }),
  );

/** validator's `range(min = …)` / `range(min, max)` on a number. */
export function range<T extends z.ZodType<number, unknown>>(schema: T, min: number, max?: number) {
  return schema.superRefine((v, ctx) => {
    if (max === undefined) {
      if (v < min) validationIssue(ctx, `value ${v} invalid, must be ${min} or larger`);
    } else if (v < min || v > max) validationIssue(ctx, `value ${v} invalid, must be from ${min} to ${max}`);
  });
}

/** Optional field: absent or `null` → `undefined`. */
export const opt = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? undefined);
/** Optional field with a default for absent or `null`. */
export const withDefault = <T extends z.ZodType>(schema: T, dflt: z.output<T>) =>
  schema.nullish().transform((v): z.output<T> => v ?? dflt);

/** A string enum with serde's unknown-variant message. */
export function variants<const T extends readonly [string, ...string[]]>(values: T) {
  const expected = values.map((v) => `\`${v}\``).join(', ');
  return z.enum(values, {
    error: (iss: RawIssue) =>
      iss.input === undefined
        ? MISSING
        : typeof iss.input === 'string'
          ? `unknown variant \`${iss.input}\`, expected one of ${expected}`
          : `invalid type: ${unexpected(iss.input)}, expected a string`,
  });
}

/** serde `#[serde(untagged)]`: the first variant that deserializes wins (see the module comment). */
export function untagged<const T extends readonly z.ZodType[]>(name: string, options: T): z.ZodType<z.output<T[number]>, unknown> {
  return z.unknown().transform((value, ctx): z.output<T[number]> => {
    let matched: z.ZodError | undefined;
    const failures: z.ZodError[] = [];
    for (const option of options) {
      const parsed = option.safeParse(value);
      if (parsed.success) return parsed.data as z.output<T[number]>;
      if (!matched && parsed.error.issues.every(isValidationIssue)) matched = parsed.error;
      failures.push(parsed.error);
    }
    if (matched) forwardIssues(ctx, matched);
    else if (value === undefined) formatIssue(ctx, MISSING);
    else {
      // serde only says "did not match"; when one variant clearly got further than the others
      // (e.g. `points[0].id` is bad, while the `batch` variant misses its key), name that error.
      const closest = furthest(failures);
      if (closest) forwardIssues(ctx, closest);
      else formatIssue(ctx, `data did not match any variant of untagged enum ${name}`);
    }
    return z.NEVER;
  }) as unknown as z.ZodType<z.output<T[number]>, unknown>;
}

/** How deep into the value a failed parse got (a missing field's own key does not count). */
export function depth(error: z.ZodError): number {
  return Math.max(...error.issues.map((i) => i.path.length - (i.message === MISSING ? 1 : 0)));
}

/** The single failure that got strictly deeper than every other, if any (and past the top level). */
export function furthest(failures: z.ZodError[]): z.ZodError | undefined {
  const depths = failures.map(depth);
  const best = Math.max(...depths);
  if (best <= 0 || depths.filter((d) => d === best).length !== 1) return undefined;
  return failures[depths.indexOf(best)];
}

/** serde's default externally tagged enum: `{"<variant>": value}` with exactly one key. */
export function externallyTagged<M extends Record<string, z.ZodType>>(
  name: string,
  schemas: M,
): z.ZodType<{ [K in keyof M]: { [P in K]: z.output<M[K]> } }[keyof M], unknown> {
  const tags = Object.keys(schemas);
  const expected = tags.map((t) => `\`${t}\``).join(', ');
  return z.unknown().transform((value, ctx) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      formatIssue(ctx, value === undefined ? MISSING : `invalid type: ${unexpected(value)}, expected enum ${name}`);
      return z.NEVER;
    }
    const keys = Object.keys(value);
    const tag = keys[0];
    if (keys.length !== 1 || tag === undefined) {
      formatIssue(ctx, `invalid type: map, expected map with a single key`);
      return z.NEVER;
    }
    const schema = schemas[tag];
    if (!schema) {
      formatIssue(ctx, `unknown variant \`${tag}\`, expected one of ${expected}`);
      return z.NEVER;
    }
    const parsed = schema.safeParse((value as Record<string, unknown>)[tag]);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        ctx.addIssue({
          code: 'custom',
          message: issue.message,
          path: [tag, ...(issue.path as PropertyKey[])],
          params: isValidationIssue(issue) ? VALIDATION : FORMAT,
        });
      }
      return z.NEVER;
    }
    return { [tag]: parsed.data };
  }) as never;
}

// ------------------------------------------------------------------------------------------------
// Point ids

export const UUID_SIMPLE = /^[0-9a-fA-F]{32}$/;
export const UUID_HYPHENATED = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Whether `s` is a UUID in a form the Rust `uuid` crate parses (simple, hyphenated, braced, urn). */
export function isQdrantUuid(s: string): boolean {
  if (s.length === 32) return UUID_SIMPLE.test(s);
  if (s.length === 36) return UUID_HYPHENATED.test(s);
  if (s.length === 38 && s.startsWith('{') && s.endsWith('}')) return UUID_HYPHENATED.test(s.slice(1, -1));
  if (s.length === 45 && s.startsWith('urn:uuid:')) return UUID_HYPHENATED.test(s.slice(9));
  return false;
}

/**
 * Qdrant `ExtendedPointId` on the wire: an unsigned integer or a UUID string. A u64 beyond 2^53
 * is a `bigint` (the vector face and the bus parse JSON exactly: common/src/exact-json.ts).
 */
export type QdrantPointId = number | bigint | string;

export const U64_MAX = 18446744073709551615n;

export function isPointId(v: unknown): v is QdrantPointId {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v <= 2 ** 64;
  if (typeof v === 'bigint') return v >= 0n && v <= U64_MAX;
  return typeof v === 'string' && isQdrantUuid(v);
}

export const QdrantPointIdSchema: z.ZodType<QdrantPointId, unknown> = z.unknown().transform((v, ctx) => {
  if (isPointId(v)) return v;
  formatIssue(
    ctx,
    v === undefined
      ? MISSING
      : `value ${typeof v === 'string' || typeof v === 'bigint' ? String(v) : JSON.stringify(v)} is not a valid point ID, valid values are either an unsigned integer or a UUID`,
  );
  return z.NEVER;
}) as unknown as z.ZodType<QdrantPointId, unknown>;

export const ids = () => list(QdrantPointIdSchema);

// ------------------------------------------------------------------------------------------------
// Error mapping

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

export function describeIssue(issue: z.core.$ZodIssue): string {
  const path = [...issue.path];
  // Qdrant's validator does not know map keys: a named vector of a point shows as `?`
  // (`points[0].vector.?.values: …`).
  if (path[0] === 'points' && path[2] === 'vector' && path.length >= 4 && typeof path[3] === 'string') path[3] = '?';
  if (issue.message === MISSING) {
    const field = path.pop();
    const msg = field === undefined ? 'missing field' : `missing field \`${String(field)}\``;
    return path.length ? `${formatPath(path)}: ${msg}` : msg;
  }
  let message = issue.message;
  if (issue.code === 'too_small' || issue.code === 'too_big') {
    // Built-in zod checks are not used by these schemas; keep a readable fallback.
    message = `value invalid, ${issue.message}`;
  }
  return path.length ? `${formatPath(path)}: ${message}` : message;
}

/**
 * Status and message Qdrant gives for a body that failed one of these schemas: 400
 * `Format error in JSON body: <field>: <msg>` when any issue is a deserialization error (the
 * first one is reported, as serde stops there), otherwise 422
 * `Validation error in JSON body: [<field>: <msg>; …]`.
 */
export function qdrantBodyError(err: z.ZodError): { status: 400 | 422; message: string } {
  const format = err.issues.find((i) => !isValidationIssue(i));
  if (format) return { status: 400, message: `Format error in JSON body: ${describeIssue(format)}` };
  return { status: 422, message: `Validation error in JSON body: [${err.issues.map(describeIssue).join('; ')}]` };
}

/** The building blocks above, for schemas kept in other files (qdrant-ops.ts) with the same serde-style errors. */

export const qdrantSchemaKit = { str, bool, f64, obj, list, map, json, uint, range, opt, withDefault, variants, untagged, externallyTagged, validationIssue, formatIssue, ids };
