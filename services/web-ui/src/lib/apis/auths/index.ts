// /api/v1/auths: the session, sign-in (password, LDAP), the admin's sign-in settings (AdminConfig,
// LDAP, OAuth/OIDC) and my API key. Types from the chat catalog.
import { api, type Body, type Reply } from '../client.ts';

/** The signed-in user as the session answers it (the edge adds the caller's `token`). */
export type SessionUser = Reply<'auths.session'> & { token?: string };
export type AdminDetails = Reply<'auths.adminDetails'>;
export type AdminConfig = Reply<'auths.adminConfig.get'>;
export type LdapConfig = Reply<'auths.ldapConfig.get'>;
/** The LDAP server form: the API answers an empty password; sent empty, the stored one is kept. */
export type LdapServer = Omit<Reply<'auths.ldapServer.get'>, 'app_dn_password'> & { app_dn_password: string };
export type LdapTestResult = Reply<'auths.ldapServer.test'>;
export type OAuthConfig = Reply<'auths.oauthConfig.get'>;
export type OidcDiscovery = Reply<'auths.oidcDiscovery.check'>;
export type ApiKey = Reply<'auths.apiKey.get'>;

const quiet = { noAuthRedirect: true } as const;

/** `GET /api/v1/auths/`: who the token or cookie belongs to (a 401 is left to the caller). */
export const getSession = (): Promise<SessionUser> => api.get<SessionUser>('/api/v1/auths/', quiet);
export const signin = (form: Body<'auths.signin'>): Promise<SessionUser> => api.post<SessionUser>('/api/v1/auths/signin', form, quiet);
export const signup = (form: Body<'auths.signup'>): Promise<SessionUser> => api.post<SessionUser>('/api/v1/auths/signup', form, quiet);
export const ldapSignin = (form: Body<'auths.ldap'>): Promise<SessionUser> => api.post<SessionUser>('/api/v1/auths/ldap', form, quiet);
export const signout = (): Promise<Reply<'auths.signout'>> => api.get<Reply<'auths.signout'>>('/api/v1/auths/signout', quiet);
/** The first admin's name and email (shown to pending users when the admin allows it). */
export const getAdminDetails = (): Promise<AdminDetails> => api.get<AdminDetails>('/api/v1/auths/admin/details', quiet);

export const getAdminConfig = (): Promise<AdminConfig> => api.get<AdminConfig>('/api/v1/auths/admin/config');
/** The whole config goes back (Open WebUI's form replaces every key it names). */
export const saveAdminConfig = (config: AdminConfig): Promise<AdminConfig> =>
  api.post<AdminConfig>('/api/v1/auths/admin/config', config satisfies Body<'auths.adminConfig.set'>);

export const getLdapConfig = (): Promise<LdapConfig> => api.get<LdapConfig>('/api/v1/auths/admin/config/ldap');
/** Open WebUI's LdapConfigForm (`enable_ldap`) plus the group settings. */
export const saveLdapConfig = (c: LdapConfig): Promise<LdapConfig> =>
  api.post<LdapConfig>('/api/v1/auths/admin/config/ldap', {
    enable_ldap: c.ENABLE_LDAP,
    enable_ldap_group_management: c.ENABLE_LDAP_GROUP_MANAGEMENT ?? false,
    enable_ldap_group_creation: c.ENABLE_LDAP_GROUP_CREATION ?? false,
    ldap_attribute_for_groups: c.LDAP_ATTRIBUTE_FOR_GROUPS ?? 'memberOf',
  } satisfies Body<'auths.ldapConfig.set'>);
export const getLdapServer = (): Promise<LdapServer> => api.get<LdapServer>('/api/v1/auths/admin/config/ldap/server');
export const saveLdapServer = (s: LdapServer): Promise<LdapServer> =>
  api.post<LdapServer>('/api/v1/auths/admin/config/ldap/server', s satisfies Body<'auths.ldapServer.set'>);
/** Binds with the form as it is (an empty password: the stored one) and reports; nothing is saved. */
export const testLdap = (s: LdapServer): Promise<LdapTestResult> =>
  api.post<LdapTestResult>('/api/v1/auths/admin/config/ldap/test', s satisfies Body<'auths.ldapServer.test'>);

export const getOAuthConfig = (): Promise<OAuthConfig> => api.get<OAuthConfig>('/api/v1/auths/admin/config/oauth');
export const saveOAuthConfig = (c: OAuthConfig): Promise<OAuthConfig> =>
  api.post<OAuthConfig>('/api/v1/auths/admin/config/oauth', c satisfies Body<'auths.oauthConfig.set'>);
export const discoverOidc = (url: string): Promise<OidcDiscovery> =>
  api.post<OidcDiscovery>('/api/v1/auths/admin/config/oauth/discover', { url } satisfies Body<'auths.oidcDiscovery.check'>);

// ---- my API key (Settings → Account) ----
export const getApiKey = (): Promise<ApiKey> => api.get<ApiKey>('/api/v1/auths/api_key');
export const createApiKey = (): Promise<ApiKey> => api.post<ApiKey>('/api/v1/auths/api_key');
export const deleteApiKey = (): Promise<Reply<'auths.apiKey.delete'>> => api.del<Reply<'auths.apiKey.delete'>>('/api/v1/auths/api_key');

// ---- my account (Settings → Account) and the admin's "Add User" ----
export type ProfileForm = Body<'auths.updateProfile'>;
export const updateProfile = (form: ProfileForm): Promise<Reply<'auths.updateProfile'>> => api.post<Reply<'auths.updateProfile'>>('/api/v1/auths/update/profile', form);
/** A wrong current password is the API's 400 (`detail`), shown as it is. */
export const updatePassword = (password: string, newPassword: string): Promise<Reply<'auths.updatePassword'>> =>
  api.post<Reply<'auths.updatePassword'>>('/api/v1/auths/update/password', { password, new_password: newPassword } satisfies Body<'auths.updatePassword'>);
/** `POST /api/v1/auths/add` (admin): a new account with the given role. */
export const addUser = (form: Body<'auths.add'>): Promise<Reply<'auths.add'>> => api.post<Reply<'auths.add'>>('/api/v1/auths/add', form);
