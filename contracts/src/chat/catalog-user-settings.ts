import { z } from 'zod';
import { catalog, GET, POST } from './catalog-kit.ts';
import { Bytes } from './replies.ts';

/**
 * What a signed-in user keeps about themselves (Open WebUI 0.10.2 routers/users.py `/user/...`):
 * the front end's own settings (`{ui: {...}}` — theme, language, the chat controls it remembers;
 * saved whole per top-level key), the free-form `info` object, their effective permissions, and
 * anyone's avatar by id.
 */

const json = z.record(z.string(), z.unknown());

/**
 * Open WebUI's UserSettings: `ui` (default `{}`) plus any other top-level key the front end keeps.
 * An update replaces each top-level key it sends and keeps the others; `ui.toolServers` is dropped
 * from it for a user without the `features.direct_tool_servers` permission.
 */
export const UserSettingsForm = z.looseObject({ ui: json.nullish().default({}) });
/** The stored settings; null until the user first saves some. */
export const UserSettingsReply = z.looseObject({ ui: json.nullish() }).nullable();
/** `info`: any JSON object, merged into what is stored (top-level keys replaced). */
export const UserInfoForm = json;
export const UserInfoReply = json.nullable();
/** The caller's permissions (the defaults widened by their groups), as the session reply's `permissions`. */
export const UserPermissionsReply = json;
/** The browser's IANA time zone (`Europe/Paris`), as Open WebUI's front end reports it on load. */
export const UpdateTimezoneForm = z.object({ timezone: z.string() });
export const StatusTrueReply = z.object({ status: z.literal(true) });
export const UserActiveStatusReply = z.object({ active: z.boolean() });

export const USER_SETTINGS_OPS = catalog({
  'users.settings.get': { subject: 'chat.users.settings.get', routes: [GET('/api/v1/users/user/settings')], reply: UserSettingsReply, auth: 'verified', events: [] },
  'users.settings.update': {
    subject: 'chat.users.settings.update',
    routes: [POST('/api/v1/users/user/settings/update')],
    body: UserSettingsForm,
    reply: UserSettingsReply,
    auth: 'verified',
    events: ['user.settings_updated'],
  },
  'users.info.get': { subject: 'chat.users.info.get', routes: [GET('/api/v1/users/user/info')], reply: UserInfoReply, auth: 'verified', events: [] },
  'users.info.update': {
    subject: 'chat.users.info.update',
    routes: [POST('/api/v1/users/user/info/update')],
    body: UserInfoForm,
    reply: UserInfoReply,
    auth: 'verified',
    events: ['user.profile_updated'],
  },
  // Open WebUI's routers/auths.py; any signed-in user, pending ones included (get_current_user).
  'auths.updateTimezone': {
    subject: 'chat.auths.updateTimezone',
    routes: [POST('/api/v1/auths/update/timezone')],
    body: UpdateTimezoneForm,
    reply: StatusTrueReply,
    auth: 'any',
    events: ['user.profile_updated'],
  },
  // Open WebUI serves the caller's permissions at /users/permissions (not under /users/user/).
  'users.permissions.get': { subject: 'chat.users.permissions.get', routes: [GET('/api/v1/users/permissions')], reply: UserPermissionsReply, auth: 'verified', events: [] },
  /** Whether a user was seen in the last three minutes (any verified user may ask, as there). */
  'users.active': { subject: 'chat.users.active', routes: [GET('/api/v1/users/:id/active')], reply: UserActiveStatusReply, auth: 'verified', events: [] },
  /**
   * A user's avatar (every user's `profile_image_url` points here by default): an uploaded raster
   * image (a `data:image/png|jpeg|gif|webp|avif|bmp;base64` URL) as its bytes, else the default
   * avatar. Open WebUI also serves an uploaded SVG (which can carry script: not here) and redirects
   * to a picture kept at an outside `http(s)` URL (this route answers bytes only: the default).
   */
  'users.profileImage': { subject: 'chat.users.profileImage', routes: [GET('/api/v1/users/:id/profile/image')], reply: Bytes, auth: 'verified', events: [] },
});
