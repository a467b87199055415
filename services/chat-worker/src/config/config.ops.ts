import { CHAT_PLATFORM_VERSION } from '@gatehouse/contracts';
import { ok, opTable } from '../context.ts';
import { hasUsers } from '../users/users.store.ts';
import { OIDC_PROVIDER, oidcConfigured } from '../auth/oauth-settings.ts';

/**
 * `GET /api/config` (auth none), Open WebUI 0.10.2's main.py get_app_config as an anonymous caller
 * sees it: name, version, the sign-in features, and `onboarding: true` while no account exists (the
 * front end then offers the first sign-up, who becomes admin). The flags a signed-in client reads
 * (folders, memories, message rating…) come from the stored settings too; Open WebUI sends them
 * only with a token, here they are not secret and always present.
 */
export const configOps = opTable({
  'config.get': async (_req, ctx) => {
    const settings = await ctx.settings();
    const onboarding = !(await hasUsers(ctx.sql));
    return ok({
      ...(onboarding ? { onboarding: true } : {}),
      status: true,
      name: 'Gatehouse',
      version: CHAT_PLATFORM_VERSION,
      default_locale: 'en-US',
      // Open WebUI: {provider key: display name} of every configured provider (the sign-in page's buttons).
      oauth: { providers: oidcConfigured(settings) ? { [OIDC_PROVIDER]: settings.OAUTH_PROVIDER_NAME || 'SSO' } : ({} as Record<string, string>) },
      features: {
        auth: true,
        auth_trusted_header: false,
        enable_signup_password_confirmation: false,
        enable_ldap: settings.ENABLE_LDAP,
        enable_api_keys: settings.ENABLE_API_KEYS,
        // The first account is never gated on ENABLE_SIGNUP (see signup).
        enable_signup: onboarding || settings.ENABLE_SIGNUP,
        enable_login_form: true,
        enable_websocket: false,
        enable_version_update_check: false,
        enable_public_active_users_count: false,
        enable_folders: settings.ENABLE_FOLDERS,
        enable_memories: settings.ENABLE_MEMORIES,
        enable_channels: false,
        enable_notes: false,
        enable_message_rating: settings.ENABLE_MESSAGE_RATING,
        enable_community_sharing: false,
        enable_code_execution: true,
        enable_code_interpreter: false,
        enable_web_search: false,
        enable_image_generation: false,
        enable_direct_connections: false,
        enable_user_webhooks: false,
        enable_admin_export: false,
        enable_admin_chat_access: false,
      },
    });
  },
});
