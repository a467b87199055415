// The Authentication page's calls and my own API key. LDAP and OAuth shapes are written out here
// (Open WebUI 0.10.2's LdapServerConfig, OAuthConfigForm) rather than imported, so this page does
// not depend on how those catalogs are split; the API checks every value (FastAPI 422).
import type { z } from 'zod';
import type { ApiKeyReply, OidcDiscoveryReply as OidcDiscoveryReplySchema } from '@gatehouse/contracts';
import { api } from '../api.ts';

export interface LdapServer {
  label: string;
  host: string;
  port: number | null;
  attribute_for_mail: string;
  attribute_for_username: string;
  app_dn: string;
  /** Always "" from the API; sent empty, the stored password is kept. */
  app_dn_password: string;
  search_base: string;
  search_filters: string;
  use_tls: boolean;
  use_starttls?: boolean;
  certificate_path: string | null;
  validate_cert: boolean;
  ciphers: string | null;
}
export interface LdapConfig {
  ENABLE_LDAP: boolean;
  ENABLE_LDAP_GROUP_MANAGEMENT?: boolean;
  ENABLE_LDAP_GROUP_CREATION?: boolean;
  LDAP_ATTRIBUTE_FOR_GROUPS?: string;
  [k: string]: unknown;
}
export interface LdapTestResult {
  ok: boolean;
  stage: string;
  message: string;
  url: string;
  elapsed_ms: number;
  entries: number | null;
}
/** The part of OAuthConfigForm the page edits; the rest goes back as it came. */
export interface OAuthConfig {
  OAUTH_PROVIDER_NAME: string;
  OPENID_PROVIDER_URL: string;
  OAUTH_CLIENT_ID: string;
  OAUTH_CLIENT_SECRET: string;
  OAUTH_SCOPES: string;
  OPENID_REDIRECT_URI: string;
  OAUTH_CODE_CHALLENGE_METHOD: string | null;
  ENABLE_OAUTH_SIGNUP: boolean;
  OAUTH_MERGE_ACCOUNTS_BY_EMAIL: boolean;
  OAUTH_ALLOWED_DOMAINS: string;
  ENABLE_OAUTH_ROLE_MANAGEMENT: boolean;
  OAUTH_ROLES_CLAIM: string;
  OAUTH_ADMIN_ROLES: string;
  OAUTH_ALLOWED_ROLES: string;
  ENABLE_OAUTH_GROUP_MANAGEMENT: boolean;
  OAUTH_GROUP_CLAIM: string;
  [k: string]: unknown;
}
export type OidcDiscovery = z.infer<typeof OidcDiscoveryReplySchema>;
export type ApiKey = z.infer<typeof ApiKeyReply>;

export const getLdapConfig = (): Promise<LdapConfig> => api.get<LdapConfig>('/api/v1/auths/admin/config/ldap');
/** Open WebUI's LdapConfigForm (`enable_ldap`) plus the group settings. */
export const saveLdapConfig = (c: LdapConfig): Promise<LdapConfig> =>
  api.post<LdapConfig>('/api/v1/auths/admin/config/ldap', {
    enable_ldap: c.ENABLE_LDAP,
    enable_ldap_group_management: c.ENABLE_LDAP_GROUP_MANAGEMENT ?? false,
    enable_ldap_group_creation: c.ENABLE_LDAP_GROUP_CREATION ?? false,
    ldap_attribute_for_groups: c.LDAP_ATTRIBUTE_FOR_GROUPS ?? 'memberOf',
  });
export const getLdapServer = (): Promise<LdapServer> => api.get<LdapServer>('/api/v1/auths/admin/config/ldap/server');
export const saveLdapServer = (s: LdapServer): Promise<LdapServer> => api.post<LdapServer>('/api/v1/auths/admin/config/ldap/server', s);
/** Binds with the form as it is (an empty password: the stored one) and reports; nothing is saved. */
export const testLdap = (s: LdapServer): Promise<LdapTestResult> => api.post<LdapTestResult>('/api/v1/auths/admin/config/ldap/test', s);

export const getOAuthConfig = (): Promise<OAuthConfig> => api.get<OAuthConfig>('/api/v1/auths/admin/config/oauth');
export const saveOAuthConfig = (c: OAuthConfig): Promise<OAuthConfig> => api.post<OAuthConfig>('/api/v1/auths/admin/config/oauth', c);
export const discoverOidc = (url: string): Promise<OidcDiscovery> => api.post<OidcDiscovery>('/api/v1/auths/admin/config/oauth/discover', { url });

// ---- my API key (Settings → Account) ----
export const getApiKey = (): Promise<ApiKey> => api.get<ApiKey>('/api/v1/auths/api_key');
export const createApiKey = (): Promise<ApiKey> => api.post<ApiKey>('/api/v1/auths/api_key');
export const deleteApiKey = (): Promise<boolean> => api.del<boolean>('/api/v1/auths/api_key');
