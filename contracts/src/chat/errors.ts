import type { z } from 'zod';

/**
 * Open WebUI's error bodies: FastAPI `HTTPException` → `{"detail": "<message>"}`; a body that
 * does not match its form → 422 `{"detail": [{type, loc, msg, input}]}` (pydantic's list). Both
 * the edge (first check) and the chat worker (defaults) produce the list from a zod error.
 */
export interface ValidationItem {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
}

export function validationDetail(err: z.ZodError, input: unknown, where: 'body' | 'query' = 'body'): ValidationItem[] {
  const items: ValidationItem[] = [];
  for (const issue of err.issues) {
    const path = issue.path.map((p) => (typeof p === 'number' ? p : String(p)));
    let at: unknown = input;
    for (const k of path) at = at && typeof at === 'object' ? (at as Record<PropertyKey, unknown>)[k] : undefined;
    if (issue.code === 'unrecognized_keys') {
      // pydantic reports each extra key on its own, at the key.
      for (const key of issue.keys) {
        items.push({ type: 'extra_forbidden', loc: [where, ...path, key], msg: 'Extra inputs are not permitted', input: (at as Record<string, unknown>)?.[key] });
      }
      continue;
    }
    if (issue.code === 'invalid_type' && at === undefined) {
      // pydantic's "missing" carries the enclosing object as its input.
      let parent: unknown = input;
      for (const k of path.slice(0, -1)) parent = parent && typeof parent === 'object' ? (parent as Record<PropertyKey, unknown>)[k] : undefined;
      items.push({ type: 'missing', loc: [where, ...path], msg: 'Field required', input: parent ?? null });
      continue;
    }
    const [type, msg] = pydanticWording(issue);
    items.push({ type, loc: [where, ...path], msg, input: at });
  }
  return items;
}

/** pydantic v2's error type and message for the common zod issues (clients show `msg`). */
function pydanticWording(issue: z.core.$ZodIssue): [string, string] {
  if (issue.code === 'invalid_type') {
    const t: Record<string, [string, string]> = {
      string: ['string_type', 'Input should be a valid string'],
      number: ['float_type', 'Input should be a valid number'],
      int: ['int_type', 'Input should be a valid integer'],
      boolean: ['bool_type', 'Input should be a valid boolean'],
      array: ['list_type', 'Input should be a valid list'],
      object: ['dict_type', 'Input should be a valid dictionary'],
      record: ['dict_type', 'Input should be a valid dictionary'],
    };
    return t[issue.expected] ?? [issue.code, issue.message];
  }
  if (issue.code === 'invalid_value') {
    return ['enum', `Input should be ${issue.values.map((v) => `'${String(v)}'`).join(', ').replace(/, ([^,]*)$/, ' or $1')}`];
  }
  if (issue.code === 'too_small') return [issue.origin === 'string' ? 'string_too_short' : 'greater_than_equal', issue.message];
  if (issue.code === 'too_big') return [issue.origin === 'string' ? 'string_too_long' : 'less_than_equal', issue.message];
  return [issue.code, issue.message];
}

/** Open WebUI's messages (its constants.py) that clients match on. */
export const OWUI_ERRORS = {
  notAuthenticated: 'Not authenticated',
  invalidToken: 'Your session has expired or the token is invalid. Please sign in again.',
  accessProhibited: 'You do not have permission to access this resource. Please contact your administrator for assistance.',
  invalidCredentials: 'The email or password provided is incorrect. Please check for typos and try logging in again.',
  rateLimited: 'API rate limit exceeded',
  notFound: 'We could not find what you\'re looking for :/',
  emailTaken: 'Uh-oh! This email is already registered. Sign in with your existing account or choose another email to start anew.',
  invalidEmail: "The email format you entered is invalid. Please double-check and make sure you're using a valid email address (e.g., yourname@example.com).",
  signupDisabled: 'You do not have permission to access this resource. Please contact your administrator for assistance.',
  default: 'Something went wrong :/',
} as const;
