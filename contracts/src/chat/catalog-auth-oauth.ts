import { z } from 'zod';
import { catalog, GET, POST } from './catalog-kit.ts';
import { SessionUser } from './replies.ts';

/**
 * OAuth / OpenID Connect sign-in (Open WebUI 0.10.2: routers/auths.py `/admin/config/oauth`,
 * utils/oauth.py, main.py's `/oauth/{provider}/…` routes). The browser flow runs at the edge
 * (services/edge/src/faces/chat/oauth-routes.ts: state, nonce, PKCE, the code exchange, the
 * session cookie); the three `oauth.*` operations are what it asks the chat worker: the provider's
 * client settings, the account behind verified claims, and who a back-channel logout names. Their
 * routes are answered by the edge's own handlers, never with a client's body.
 */

/** The settings the admin form shows (OAuthConfigForm, every field; comma lists as comma strings). */
export const OAuthConfig = z.object({
  ENABLE_OAUTH_SIGNUP: z.boolean(),
  OAUTH_MERGE_ACCOUNTS_BY_EMAIL: z.boolean(),
  OAUTH_AUTO_REDIRECT: z.boolean(),
  OAUTH_ALLOWED_DOMAINS: z.string(),
  OAUTH_BLOCKED_GROUPS: z.string(),
  ENABLE_OAUTH_ROLE_MANAGEMENT: z.boolean(),
  OAUTH_ROLES_CLAIM: z.string(),
  OAUTH_ADMIN_ROLES: z.string(),
  OAUTH_ALLOWED_ROLES: z.string(),
  ENABLE_OAUTH_GROUP_MANAGEMENT: z.boolean(),
  ENABLE_OAUTH_GROUP_CREATION: z.boolean(),
  OAUTH_GROUP_CLAIM: z.string(),
  OAUTH_GROUP_DEFAULT_SHARE: z.union([z.boolean(), z.string()]),
  OAUTH_PROVIDER_NAME: z.string(),
  OPENID_PROVIDER_URL: z.string(),
  OAUTH_CLIENT_ID: z.string(),
  OAUTH_CLIENT_SECRET: z.string(),
  OPENID_REDIRECT_URI: z.string(),
  OAUTH_SCOPES: z.string(),
  OAUTH_CODE_CHALLENGE_METHOD: z.string().nullable(),
  OAUTH_TOKEN_ENDPOINT_AUTH_METHOD: z.string().nullable(),
  OPENID_END_SESSION_ENDPOINT: z.string(),
  OAUTH_TIMEOUT: z.union([z.number(), z.string()]),
  OAUTH_CLIENT_TIMEOUT: z.union([z.number(), z.string()]),
  OAUTH_EMAIL_CLAIM: z.string(),
  OAUTH_USERNAME_CLAIM: z.string(),
  OAUTH_PICTURE_CLAIM: z.string(),
  OAUTH_SUB_CLAIM: z.string().nullable(),
  OAUTH_AUDIENCE: z.string(),
  OAUTH_UPDATE_EMAIL_ON_LOGIN: z.boolean(),
  OAUTH_UPDATE_NAME_ON_LOGIN: z.boolean(),
  OAUTH_UPDATE_PICTURE_ON_LOGIN: z.boolean(),
  OAUTH_REFRESH_TOKEN_INCLUDE_SCOPE: z.boolean(),
});
export type OAuthConfig = z.infer<typeof OAuthConfig>;

/** `POST /api/v1/auths/admin/config/oauth`: every field optional, null = leave as it is (exclude_none). */
export const OAuthConfigForm = z.object(
  Object.fromEntries(Object.entries(OAuthConfig.shape).map(([k, v]) => [k, (v as z.ZodType).nullish()])) as {
    [K in keyof OAuthConfig]: z.ZodOptional<z.ZodNullable<(typeof OAuthConfig.shape)[K]>>;
  },
);

/** What the edge needs to run one provider's flow (the worker's current settings; secret included, bus only). */
export const OAuthClientSettings = z.object({
  provider: z.string(),
  name: z.string(),
  discoveryUrl: z.string(),
  clientId: z.string(),
  clientSecret: z.string(),
  scopes: z.string(),
  /** `S256` or `plain`; Gatehouse always sends a PKCE challenge (S256 when the setting is empty). */
  codeChallengeMethod: z.enum(['S256', 'plain']),
  /** How the client authenticates at the token endpoint (`none` when there is no secret). */
  tokenEndpointAuthMethod: z.enum(['client_secret_basic', 'client_secret_post', 'none']),
  /** OPENID_REDIRECT_URI; empty → the edge's own `/oauth/<provider>/login/callback`. */
  redirectUri: z.string(),
  /** OPENID_END_SESSION_ENDPOINT; empty → the provider's discovery document's. */
  endSessionEndpoint: z.string(),
  /** Seconds to wait for the provider (OAUTH_TIMEOUT); null → the edge's default. */
  timeoutS: z.number().nullable(),
  audience: z.string(),
  /** WEBUI_URL: where the browser lands after the callback (empty → the request's own origin). */
  webuiUrl: z.string(),
  /** ENABLE_OAUTH_TOKEN_EXCHANGE: `POST /api/v1/auths/oauth/<provider>/token/exchange` is open. */
  tokenExchange: z.boolean(),
});
export type OAuthClientSettings = z.infer<typeof OAuthClientSettings>;

/** What the edge sends after a verified code exchange: the ID token's claims merged with userinfo. */
export const OAuthSigninBody = z.object({
  provider: z.string(),
  claims: z.record(z.string(), z.unknown()),
});
export type OAuthSigninBody = z.infer<typeof OAuthSigninBody>;

/** A verified back-channel logout token's subject, and the account it belongs to (if any). */
export const OAuthLogoutBody = z.object({ provider: z.string(), sub: z.string().nullable(), sid: z.string().nullable() });
export const OAuthLogoutReply = z.object({ user_id: z.string().nullable() });

/** `POST /api/v1/auths/oauth/{provider}/token/exchange` (Open WebUI's TokenExchangeForm): a provider access token. */
export const TokenExchangeForm = z.object({ token: z.string() });

export const AUTH_OAUTH_OPS = catalog({
  'auths.oauthConfig.get': { subject: 'chat.auths.oauthConfig.get', routes: [GET('/api/v1/auths/admin/config/oauth')], reply: OAuthConfig, auth: 'admin', events: [] },
  'auths.oauthConfig.set': {
    subject: 'chat.auths.oauthConfig.set',
    routes: [POST('/api/v1/auths/admin/config/oauth')],
    body: OAuthConfigForm,
    reply: OAuthConfig,
    auth: 'admin',
    events: ['config.updated'],
  },
  // The browser flow: the edge answers these routes itself (oauth-routes.ts) and asks the worker.
  'oauth.login': { subject: 'chat.oauth.login', routes: [GET('/oauth/:provider/login')], reply: OAuthClientSettings, auth: 'none', events: [], edge: { handler: 'oauthLogin' } },
  'oauth.callback': {
    subject: 'chat.oauth.callback',
    routes: [GET('/oauth/:provider/login/callback'), GET('/oauth/:provider/callback')],
    reply: SessionUser,
    auth: 'none',
    events: ['user.created', 'user.role_updated', 'user.updated', 'auth.login', 'group.created', 'group.member_added', 'group.member_removed'],
    workerBody: OAuthSigninBody,
    edge: { handler: 'oauthCallback' },
  },
  // A provider's access token for a session (Open WebUI, only with ENABLE_OAUTH_TOKEN_EXCHANGE): the
  // edge reads the provider's userinfo with it and sends the worker those claims, never the body.
  'oauth.tokenExchange': {
    subject: 'chat.oauth.tokenExchange',
    routes: [POST('/api/v1/auths/oauth/:provider/token/exchange')],
    body: TokenExchangeForm,
    workerBody: OAuthSigninBody,
    reply: SessionUser,
    auth: 'none',
    events: ['auth.login'],
    edge: { handler: 'oauthTokenExchange' },
  },
  'oauth.backchannelLogout': { subject: 'chat.oauth.backchannelLogout', routes: [POST('/oauth/backchannel-logout')], reply: OAuthLogoutReply, auth: 'none', events: ['auth.logout'], workerBody: OAuthLogoutBody, edge: { handler: 'oauthBackchannelLogout' } },
});
