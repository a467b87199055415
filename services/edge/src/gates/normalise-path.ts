/**
 * The path a request really names, after the tricks a proxy or a server might undo differently:
 * percent-encoding (also double), backslashes, repeated slashes, `.` and `..` segments.
 * `tricky` is true when the raw path differs from its normal form; an exempt-path check must
 * refuse such a path, so `/health/../v1/models` or `/docs/%2e%2e/v1/models` is never exempt.
 */
export function normalisePath(rawUrl: string): { path: string; tricky: boolean } {
  const raw = rawUrl.split(/[?#]/, 1)[0] ?? '';
  let decoded = raw;
  let tricky = false;
  for (let i = 0; i < 3; i++) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      return { path: raw, tricky: true };
    }
    if (next === decoded) break;
    tricky = true;
    decoded = next;
  }
  const segments: string[] = [];
  for (const seg of decoded.replace(/\\/g, '/').split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') segments.pop();
    else segments.push(seg);
  }
  const trailing = decoded.length > 1 && decoded.endsWith('/') ? '/' : '';
  const path = `/${segments.join('/')}${segments.length ? trailing : ''}`;
  return { path, tricky: tricky || path !== raw };
}

/** Exempt-path matcher from patterns: exact `/health`, or a prefix with `/*` (`/admin/*`). */
export function exemptMatcher(patterns: readonly string[]): (path: string) => boolean {
  const exact = new Set(patterns.filter((p) => !p.endsWith('/*')));
  const prefixes = patterns.filter((p) => p.endsWith('/*')).map((p) => p.slice(0, -1));
  return (path) => exact.has(path) || prefixes.some((p) => path.startsWith(p));
}
