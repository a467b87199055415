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
  return err.issues.map((issue) => {
    let at: unknown = input;
    for (const k of issue.path) at = at && typeof at === 'object' ? (at as Record<PropertyKey, unknown>)[k as PropertyKey] : undefined;
    const missing = issue.code === 'invalid_type' && at === undefined;
    return {
      type: missing ? 'missing' : issue.code,
      loc: [where, ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))],
      msg: missing ? 'Field required' : issue.message,
      input: missing ? (issue.path.length > 1 ? undefined : input) : at,
    };
  });
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
