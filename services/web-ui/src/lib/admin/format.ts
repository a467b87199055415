// What the admin pages share besides their calls: form rules and how values are shown.

/** Open WebUI's admin form rule for JWT_EXPIRES_IN (-1: never expires). */
export const JWT_EXPIRES_IN_PATTERN = /^(-1|0|(-?\d+(\.\d+)?)(ms|s|m|h|d|w))$/;

/** Epoch seconds as a local date and time; '—' for never. */
export function when(epoch: unknown): string {
  return typeof epoch === 'number' && epoch > 0 ? new Date(epoch * 1000).toLocaleString() : '—';
}

/** `chat.*, auth.login` → ['chat.*', 'auth.login']; empty → every event. */
export function parseEvents(text: string): string[] {
  const list = text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
  return list.length ? list : ['*'];
}
