/**
 * Avatars as `GET /api/v1/users/{id}/profile/image` serves them: an uploaded picture is kept in
 * the user's row as a `data:` URL (Open WebUI's front end uploads it so); only raster types are
 * served from it, so a stored SVG (which can carry script) never runs on this origin.
 */

/** Raster types an uploaded avatar may be served as; anything else (SVG can carry script) gets the default. */
const IMAGE_TYPES: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/jpg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/avif': 'avif',
  'image/bmp': 'bmp',
};
const DATA_URL = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]*)$/i;

/** The default avatar: a grey head and shoulders (Open WebUI serves its static user.png). */
export const DEFAULT_AVATAR = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64">' +
    '<rect width="64" height="64" fill="#e5e7eb"/><circle cx="32" cy="25" r="11" fill="#9ca3af"/>' +
    '<path d="M12 58c2-12 10-18 20-18s18 6 20 18z" fill="#9ca3af"/></svg>',
);

/** An uploaded avatar's bytes and type, or undefined when the stored URL is not one we serve. */
export function avatarFromDataUrl(url: string): { bytes: Buffer; contentType: string; ext: string } | undefined {
  const m = DATA_URL.exec(url);
  if (!m) return undefined;
  const contentType = m[1]!.toLowerCase();
  const ext = IMAGE_TYPES[contentType];
  if (!ext) return undefined;
  const bytes = Buffer.from(m[2]!.replace(/\s/g, ''), 'base64');
  return bytes.length ? { bytes, contentType, ext } : undefined;
}
