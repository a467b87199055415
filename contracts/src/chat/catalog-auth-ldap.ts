import { z } from 'zod';
import { catalog, GET, POST } from './catalog-kit.ts';
import { SessionUser } from './replies.ts';

/**
 * LDAP sign-in and its admin settings (Open WebUI 0.10.2 routers/auths.py: `POST /ldap`,
 * `/admin/config/ldap`, `/admin/config/ldap/server`), handled by the chat worker
 * (services/chat-worker/src/auth/ldap.ops.ts, client in auth/ldap.ts). Settings are chat settings
 * (Open WebUI's names, LDAP_*), so they travel the config bucket and apply live on every replica.
 *
 * Where this differs from Open WebUI, on purpose:
 * - `app_dn_password` is never returned: GET and POST answer it as "" (Open WebUI returns it in
 *   clear); a POST with "" keeps the stored one.
 * - `use_starttls` (ours, default false): upgrade a plain `ldap://` connection with StartTLS;
 *   `use_tls` stays Open WebUI's LDAPS.
 * - `/admin/config/ldap` also carries the group settings Open WebUI reads only from the
 *   environment (ENABLE_LDAP_GROUP_MANAGEMENT, ENABLE_LDAP_GROUP_CREATION, LDAP_ATTRIBUTE_FOR_GROUPS).
 * - `POST /admin/config/ldap/test` (ours; Open WebUI has none): bind with the application DN and report.
 */

/** Open WebUI's LdapForm. */
export const LdapForm = z.object({ user: z.string(), password: z.string() });

/** Open WebUI's LdapServerConfig (pydantic: port Optional[int], certificate_path and ciphers Optional[str]). */
export const LdapServerConfig = z.object({
  label: z.string(),
  host: z.string(),
  port: z.number().int().nullish(),
  attribute_for_mail: z.string().default('mail'),
  attribute_for_username: z.string().default('uid'),
  app_dn: z.string(),
  app_dn_password: z.string(),
  search_base: z.string(),
  search_filters: z.string().default(''),
  use_tls: z.boolean().default(true),
  certificate_path: z.string().nullish(),
  validate_cert: z.boolean().default(true),
  ciphers: z.string().nullish(),
  use_starttls: z.boolean().optional(),
});
export type LdapServerConfig = z.infer<typeof LdapServerConfig>;

export const LdapServerReply = z.object({
  label: z.string(),
  host: z.string(),
  port: z.number().int().nullable(),
  attribute_for_mail: z.string(),
  attribute_for_username: z.string(),
  app_dn: z.string(),
  /** Always "": the stored password is never returned. */
  app_dn_password: z.literal(''),
  search_base: z.string(),
  search_filters: z.string(),
  use_tls: z.boolean(),
  certificate_path: z.string().nullable(),
  validate_cert: z.boolean(),
  ciphers: z.string().nullable(),
  use_starttls: z.boolean(),
});

/** Open WebUI's LdapConfigForm (`enable_ldap`), plus the group settings (ours to edit). */
export const LdapConfigForm = z.object({
  enable_ldap: z.boolean().nullish(),
  enable_ldap_group_management: z.boolean().nullish(),
  enable_ldap_group_creation: z.boolean().nullish(),
  ldap_attribute_for_groups: z.string().nullish(),
});
export const LdapConfigReply = z.object({
  ENABLE_LDAP: z.boolean(),
  ENABLE_LDAP_GROUP_MANAGEMENT: z.boolean(),
  ENABLE_LDAP_GROUP_CREATION: z.boolean(),
  LDAP_ATTRIBUTE_FOR_GROUPS: z.string(),
});

/**
 * The test: the body is an optional LdapServerConfig to try before saving it (an empty
 * `app_dn_password` means the stored one); no body tests what is stored. Connection and
 * application bind are reported, never thrown: `ok` false with the stage that failed.
 */
export const LdapTestForm = z
  .object({
    label: z.string(),
    host: z.string(),
    port: z.number().int().nullable(),
    attribute_for_mail: z.string(),
    attribute_for_username: z.string(),
    app_dn: z.string(),
    app_dn_password: z.string(),
    search_base: z.string(),
    search_filters: z.string(),
    use_tls: z.boolean(),
    certificate_path: z.string().nullable(),
    validate_cert: z.boolean(),
    ciphers: z.string().nullable(),
    use_starttls: z.boolean(),
  })
  .partial()
  .nullish();
export const LdapTestReply = z.object({
  ok: z.boolean(),
  /** How far it got: `connect` (TCP/TLS), `bind` (application DN), `search` (the search base), `done`. */
  stage: z.enum(['connect', 'bind', 'search', 'done']),
  message: z.string(),
  url: z.string(),
  elapsed_ms: z.number(),
  /** Entries the search base and filters match (at most 1000 counted), when the search ran. */
  entries: z.number().int().nullable(),
});

export const AUTH_LDAP_OPS = catalog({
  'auths.ldap': {
    subject: 'chat.auths.ldap',
    routes: [POST('/api/v1/auths/ldap')],
    body: LdapForm,
    reply: SessionUser,
    auth: 'none',
    events: ['user.created', 'auth.login', 'group.created', 'group.member_added', 'group.member_removed'],
    edge: { session: 'issue', signinLimit: 'user' },
  },
  'auths.ldapConfig.get': { subject: 'chat.auths.ldapConfig.get', routes: [GET('/api/v1/auths/admin/config/ldap')], reply: LdapConfigReply, auth: 'admin', events: [] },
  'auths.ldapConfig.set': {
    subject: 'chat.auths.ldapConfig.set',
    routes: [POST('/api/v1/auths/admin/config/ldap')],
    body: LdapConfigForm,
    reply: LdapConfigReply,
    auth: 'admin',
    events: ['config.updated'],
  },
  'auths.ldapServer.get': { subject: 'chat.auths.ldapServer.get', routes: [GET('/api/v1/auths/admin/config/ldap/server')], reply: LdapServerReply, auth: 'admin', events: [] },
  'auths.ldapServer.set': {
    subject: 'chat.auths.ldapServer.set',
    routes: [POST('/api/v1/auths/admin/config/ldap/server')],
    body: LdapServerConfig,
    reply: LdapServerReply,
    auth: 'admin',
    events: ['config.updated'],
  },
  'auths.ldapServer.test': {
    subject: 'chat.auths.ldapServer.test',
    routes: [POST('/api/v1/auths/admin/config/ldap/test')],
    body: LdapTestForm,
    reply: LdapTestReply,
    auth: 'admin',
    events: [],
  },
});

/** Messages (Open WebUI's where it has one). */
export const LDAP_ERRORS = {
  notEnabled: 'LDAP authentication is not enabled',
  noEmail: 'User does not have a valid email address.',
  unavailable: 'The LDAP server cannot be reached right now. Try again later, or sign in with a local account.',
  appBindFailed: 'The LDAP server refused the application account (check the LDAP server settings).',
  misconfigured: 'LDAP sign-in is misconfigured; an administrator can run the connection test in the LDAP settings.',
  requiredField: (key: string) => `Required field ${key} is empty`,
} as const;
