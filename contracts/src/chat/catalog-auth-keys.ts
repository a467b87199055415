import { z } from 'zod';
import { requestContract } from '../catalog.ts';
import { ChatOpReply, ChatOpRequest } from './bus.ts';
import { catalog, DELETE, GET, POST } from './catalog-kit.ts';

/**
 * Per-user API keys (Open WebUI 0.10.2 routers/auths.py `/api_key`): `sk-` + 32 hex digits, one per
 * user (POST replaces it). Stored as its SHA-256 digest only, so the key is shown once, in the POST
 * answer; GET answers a masked form (`sk-…` + its last four characters) so a client can still tell
 * that a key exists and which one. Using a key is decided at the edge (api-keys.ts there) from a
 * cache filled over `chat.apikeys.resolve` and emptied by `chat.apikeys.invalidate`.
 */
export const ApiKeyReply = z.object({ api_key: z.string() });

/**
 * The admin page's OIDC discovery check (Gatehouse's own, admin): fetch the provider's
 * `.well-known/openid-configuration` from the worker (OPENID_PROVIDER_URL as Open WebUI takes it —
 * the document's URL — or the issuer, to which the well-known path is added) and report what it
 * says. Reported, never thrown: `ok` false with the reason when it cannot be read.
 */
export const OidcDiscoveryForm = z.object({ url: z.string() });
export const OidcDiscoveryReply = z.object({
  ok: z.boolean(),
  url: z.string(),
  status: z.number().int().nullable(),
  message: z.string(),
  elapsed_ms: z.number(),
  issuer: z.string().nullable(),
  authorization_endpoint: z.string().nullable(),
  token_endpoint: z.string().nullable(),
  userinfo_endpoint: z.string().nullable(),
  end_session_endpoint: z.string().nullable(),
  code_challenge_methods_supported: z.array(z.string()).nullable(),
});

export const AUTH_KEYS_OPS = catalog({
  'auths.apiKey.create': { subject: 'chat.auths.apiKey.create', routes: [POST('/api/v1/auths/api_key')], reply: ApiKeyReply, auth: 'any', events: ['auth.api_key.created'] },
  'auths.apiKey.get': { subject: 'chat.auths.apiKey.get', routes: [GET('/api/v1/auths/api_key')], reply: ApiKeyReply, auth: 'any', events: [] },
  'auths.apiKey.delete': { subject: 'chat.auths.apiKey.delete', routes: [DELETE('/api/v1/auths/api_key')], reply: z.boolean(), auth: 'any', events: ['auth.api_key.deleted'] },
  'auths.oidcDiscovery.check': {
    subject: 'chat.auths.oidcDiscovery.check',
    routes: [POST('/api/v1/auths/admin/config/oauth/discover')],
    body: OidcDiscoveryForm,
    reply: OidcDiscoveryReply,
    auth: 'admin',
    events: [],
  },
});

/**
 * Edge → worker, on the first use of a key at an edge: who owns the key with this SHA-256 digest
 * (hex), and whether that user may use keys (admin, or the `features.api_keys` permission). Not an
 * HTTP route: only the edge asks. `user_id` null = no such key.
 */
export const ApiKeyResolveRequest = z.object({ hash: z.string().regex(/^[0-9a-f]{64}$/) });
export const ApiKeyResolveReply = z.object({ user_id: z.string().nullable(), allowed: z.boolean() });
export const apiKeyResolveContract = requestContract('chat.apikeys.resolve', 1, ApiKeyResolveRequest, ApiKeyResolveReply);

/**
 * Worker → every edge (core NATS, no reply): drop cached keys. Published after the change
 * committed and before the worker answers, for a deleted or replaced key (`user_id`), a deleted or
 * demoted user (`user_id`), or every key (`all`, e.g. when the permission defaults could change).
 */
export const API_KEYS_INVALIDATE_SUBJECT = 'chat.apikeys.invalidate';
export const ApiKeysInvalidate = z.union([z.object({ user_id: z.string() }), z.object({ all: z.literal(true) })]);
export type ApiKeysInvalidate = z.infer<typeof ApiKeysInvalidate>;

/**
 * Edge → worker: a request that came through a trusted proxy (EDGE_TRUST_PROXY) carrying
 * WEBUI_AUTH_TRUSTED_EMAIL_HEADER signs that user in, creating the account on first sight (Open
 * WebUI's signin in trusted-header mode); the groups header, when configured, sets the user's
 * membership among existing groups of those names. Answers like sign-in (`issueSession`).
 */
export const TrustedSigninRequest = ChatOpRequest.extend({
  body: z.object({ email: z.string(), name: z.string(), groups: z.array(z.string()).nullable() }),
});
export const trustedSigninContract = requestContract('chat.auths.trusted', 1, TrustedSigninRequest, ChatOpReply);

/** Open WebUI's messages for keys (constants.py). */
export const API_KEY_ERRORS = {
  notAllowed: 'Use of API key is not enabled in the environment.',
  creationNotAllowed: 'API key creation is not allowed in the environment.',
  notFound: "Oops! It looks like there's a hiccup. The API key is missing. Please make sure to provide a valid API key to access this feature.",
  endpointNotAllowed: 'API key not allowed to access this endpoint.',
  invalidTrustedHeader: 'Your provider has not provided a trusted header. Please contact your administrator for assistance.',
  userMismatch: 'User mismatch. Please sign in again.',
} as const;
