// A tiny History-API router. Routes are declared in src/routes.ts (one entry per page).
import { writable, type Readable } from 'svelte/store';

const pathStore = writable(typeof location === 'undefined' ? '/' : location.pathname);
const searchStore = writable(typeof location === 'undefined' ? '' : location.search);

/** The current location.pathname. */
export const path: Readable<string> = { subscribe: pathStore.subscribe };
/** The current location.search (with the leading `?`, or ''). */
export const search: Readable<string> = { subscribe: searchStore.subscribe };

function sync(): void {
  pathStore.set(location.pathname);
  searchStore.set(location.search);
}

if (typeof window !== 'undefined') {
  window.addEventListener('popstate', sync);
}

/** Go to an app path (pushState), or replace the current entry. */
export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  const url = new URL(to, location.href);
  if (url.origin !== location.origin) {
    location.assign(url.href);
    return;
  }
  const target = url.pathname + url.search + url.hash;
  const current = location.pathname + location.search + location.hash;
  if (target !== current) {
    if (opts.replace) history.replaceState(null, '', target);
    else history.pushState(null, '', target);
  }
  sync();
}

/**
 * Turn plain same-origin `<a href>` clicks into client-side navigation, so links stay real links
 * (middle-click, open in new tab, copy address). Returns the remover.
 */
export function interceptLinks(root: HTMLElement | Document = document): () => void {
  const onClick = (ev: Event): void => {
    const e = ev as MouseEvent;
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element | null)?.closest?.('a');
    if (!a || !a.hasAttribute('href')) return;
    if (a.target && a.target !== '_self') return;
    if (a.hasAttribute('download') || a.getAttribute('rel')?.includes('external')) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin) return;
    // The API and health routes are served by the edge, not by the app.
    if (url.pathname.startsWith('/api/') || url.pathname === '/health') return;
    e.preventDefault();
    navigate(url.pathname + url.search + url.hash);
  };
  root.addEventListener('click', onClick);
  return () => root.removeEventListener('click', onClick);
}

export interface RouteDef<C = unknown> {
  /** `/`, `/c/:id`, `/admin/*` (a trailing `*` matches the prefix and anything below it). */
  pattern: string;
  component: C;
  /** `app`: sidebar + main, signed-in users only. `bare`: full page, no sign-in needed. */
  layout: 'app' | 'bare';
  /** Admin role required (others are sent to `/`). */
  admin?: boolean;
}

export interface RouteMatch<C = unknown> {
  route: RouteDef<C>;
  params: Record<string, string>;
}

export function matchPath(pattern: string, pathname: string): Record<string, string> | null {
  const clean = (p: string): string[] => p.replace(/\/+$/, '').split('/').filter(Boolean);
  const want = clean(pattern);
  const have = clean(pathname);
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    if (w === '*') {
      params['rest'] = have.slice(i).map(decodeURIComponent).join('/');
      return params;
    }
    const h = have[i];
    if (h === undefined) return null;
    if (w.startsWith(':')) params[w.slice(1)] = decodeURIComponent(h);
    else if (w !== h) return null;
  }
  return have.length === want.length ? params : null;
}

export function matchRoute<C>(routes: readonly RouteDef<C>[], pathname: string): RouteMatch<C> | null {
  for (const route of routes) {
    const params = matchPath(route.pattern, pathname);
    if (params) return { route, params };
  }
  return null;
}
