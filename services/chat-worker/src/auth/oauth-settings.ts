import { z } from 'zod';

/**
 * OAuth / OIDC settings: Open WebUI 0.10.2's OAuthConfigForm names, its defaults (config.py), stored
 * like every other chat setting (one `config` row per key, seeded from the environment variables of
 * the same names, carried live by the config bucket). Comma lists (allowed domains, roles) are kept
 * as the comma strings the admin form sends and shows.
 */
export const OAUTH_SETTINGS = {
  ENABLE_OAUTH_SIGNUP: z.boolean().default(false),
  OAUTH_MERGE_ACCOUNTS_BY_EMAIL: z.boolean().default(false),
  OAUTH_AUTO_REDIRECT: z.boolean().default(false),
  OAUTH_ALLOWED_DOMAINS: z.string().default('*'),
  OAUTH_BLOCKED_GROUPS: z.string().default('[]'),
  ENABLE_OAUTH_ROLE_MANAGEMENT: z.boolean().default(false),
  OAUTH_ROLES_CLAIM: z.string().default('roles'),
  OAUTH_ADMIN_ROLES: z.string().default('admin'),
  OAUTH_ALLOWED_ROLES: z.string().default('user,admin'),
  ENABLE_OAUTH_GROUP_MANAGEMENT: z.boolean().default(false),
  ENABLE_OAUTH_GROUP_CREATION: z.boolean().default(false),
  OAUTH_GROUP_CLAIM: z.string().default('groups'),
  OAUTH_GROUP_DEFAULT_SHARE: z.union([z.boolean(), z.string()]).default(true),
  OAUTH_PROVIDER_NAME: z.string().default('SSO'),
  OPENID_PROVIDER_URL: z.string().default(''),
  OAUTH_CLIENT_ID: z.string().default(''),
  OAUTH_CLIENT_SECRET: z.string().default(''),
  OPENID_REDIRECT_URI: z.string().default(''),
  OAUTH_SCOPES: z.string().default('openid email profile'),
  OAUTH_CODE_CHALLENGE_METHOD: z.string().nullable().default(null),
  OAUTH_TOKEN_ENDPOINT_AUTH_METHOD: z.string().nullable().default(null),
  OPENID_END_SESSION_ENDPOINT: z.string().default(''),
  OAUTH_TIMEOUT: z.union([z.number(), z.string()]).default(''),
  OAUTH_CLIENT_TIMEOUT: z.union([z.number(), z.string()]).default(''),
  OAUTH_EMAIL_CLAIM: z.string().default('email'),
  OAUTH_USERNAME_CLAIM: z.string().default('name'),
  OAUTH_PICTURE_CLAIM: z.string().default('picture'),
  OAUTH_SUB_CLAIM: z.string().nullable().default(null),
  OAUTH_AUDIENCE: z.string().default(''),
  OAUTH_UPDATE_EMAIL_ON_LOGIN: z.boolean().default(false),
  OAUTH_UPDATE_NAME_ON_LOGIN: z.boolean().default(false),
  OAUTH_UPDATE_PICTURE_ON_LOGIN: z.boolean().default(false),
  OAUTH_REFRESH_TOKEN_INCLUDE_SCOPE: z.boolean().default(false),
  // Not on the admin form (Open WebUI reads it from the environment only): the token exchange route.
  ENABLE_OAUTH_TOKEN_EXCHANGE: z.boolean().default(false),
};
export type OAuthSettingKey = keyof typeof OAUTH_SETTINGS;
export const OAUTH_SETTING_KEYS = Object.keys(OAUTH_SETTINGS) as OAuthSettingKey[];
export type OAuthSettings = { [K in OAuthSettingKey]: z.infer<(typeof OAUTH_SETTINGS)[K]> };

/** Every OAuth setting may be seeded from the environment variable of its name. */
export const OAUTH_ENV_SEEDS: OAuthSettingKey[] = OAUTH_SETTING_KEYS;

/** The one provider this build offers (Open WebUI's generic OIDC provider, key `oidc`). */
export const OIDC_PROVIDER = 'oidc';

/** Open WebUI registers `oidc` when it has a client id, a discovery URL, and a secret or PKCE. */
export function oidcConfigured(s: OAuthSettings): boolean {
  return !!(s.OAUTH_CLIENT_ID && s.OPENID_PROVIDER_URL);
}

/** `a, b ,c` → ['a', 'b', 'c'] (Open WebUI splits its comma-list settings the same way). */
export const commaList = (v: string): string[] =>
  v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** A claim by dotted path (`realm_access.roles`), else the flat claim of that exact name. */
export function claimAt(claims: Record<string, unknown>, path: string): unknown {
  let at: unknown = claims;
  for (const part of path.split('.')) at = at && typeof at === 'object' && !Array.isArray(at) ? (at as Record<string, unknown>)[part] : undefined;
  if (at === undefined || at === null || (typeof at === 'object' && !Array.isArray(at) && Object.keys(at).length === 0)) return claims[path];
  return at;
}

/** A list claim as strings: an array, a comma-separated string, or one value. */
export function claimList(v: unknown): string[] {
  if (Array.isArray(v)) return v.filter((x) => typeof x === 'string' || typeof x === 'number').map(String);
  if (typeof v === 'string') return v.includes(',') ? commaList(v) : v ? [v] : [];
  if (typeof v === 'number') return [String(v)];
  return [];
}

export type Role = 'admin' | 'user' | 'pending';

/**
 * Open WebUI's get_user_role: the only account (or the first one) is admin; with role management
 * the roles claim decides (an admin role → admin, an allowed role → user, neither → the default
 * role); without it a new account gets the default role and an existing one keeps its own.
 */
export function roleFor(
  s: OAuthSettings & { DEFAULT_USER_ROLE: Role },
  existing: { role: Role } | null,
  userCount: number,
  claims: Record<string, unknown>,
): Role {
  if (existing && userCount === 1) return 'admin';
  if (!existing && userCount === 0) return 'admin';
  if (!s.ENABLE_OAUTH_ROLE_MANAGEMENT) return existing ? existing.role : s.DEFAULT_USER_ROLE;
  const allowed = commaList(s.OAUTH_ALLOWED_ROLES);
  const admin = commaList(s.OAUTH_ADMIN_ROLES);
  let role: Role = s.DEFAULT_USER_ROLE;
  if (!s.OAUTH_ROLES_CLAIM || !allowed.length || !admin.length) return role;
  const roles = claimList(claimAt(claims, s.OAUTH_ROLES_CLAIM));
  if (roles.some((r) => allowed.includes(r))) role = 'user';
  if (roles.some((r) => admin.includes(r))) role = 'admin';
  return role;
}

/** OAUTH_BLOCKED_GROUPS: a JSON list of names (Open WebUI); anything unreadable blocks nothing. */
export function blockedGroups(raw: string): string[] {
  try {
    const v = JSON.parse(raw) as unknown;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** Open WebUI's allowed-domain check: `*` admits any, else the address's domain must be listed. */
export function domainAllowed(allowedDomains: string, email: string): boolean {
  const list = commaList(allowedDomains).map((d) => d.toLowerCase());
  return list.includes('*') || list.includes(email.split('@').pop()!.toLowerCase());
}
