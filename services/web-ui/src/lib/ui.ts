// UI state shared by the shell: theme, sidebar, app config, "new chat" requests.
import { writable, readable, get } from 'svelte/store';
import { getAppConfig, type AppConfig } from './apis/configs/index.ts';
import { persisted } from './stores.ts';

export type Theme = 'light' | 'dark' | 'system';

/** Theme choice, localStorage `theme` (as Open WebUI). `system` follows prefers-color-scheme. */
export const theme = persisted<Theme>('theme', 'system');

export function applyTheme(t: Theme): void {
  const root = document.documentElement;
  if (t === 'light' || t === 'dark') root.dataset['theme'] = t;
  else delete root.dataset['theme'];
}

const NARROW = '(max-width: 767.98px)';

/** True below 768 px: the sidebar is an overlay there. */
export const isNarrow = readable(typeof matchMedia === 'function' ? matchMedia(NARROW).matches : false, (set) => {
  if (typeof matchMedia !== 'function') return;
  const mq = matchMedia(NARROW);
  const on = (): void => set(mq.matches);
  mq.addEventListener('change', on);
  on();
  return () => mq.removeEventListener('change', on);
});

/** Desktop preference (persisted); on a narrow viewport the sidebar starts closed. */
const desktopSidebar = persisted<boolean>('sidebarOpen', true);
export const sidebarOpen = writable<boolean>(
  typeof matchMedia === 'function' && matchMedia(NARROW).matches ? false : desktopSidebarOpen(),
);
/** The remembered wide-viewport choice. */
export function desktopSidebarOpen(): boolean {
  return get(desktopSidebar);
}
/** Open/close the sidebar; remembers the choice on wide viewports. */
export function setSidebar(open: boolean, narrow: boolean): void {
  sidebarOpen.set(open);
  if (!narrow) desktopSidebar.set(open);
}

/** Bumped by the sidebar's New Chat button: the chat page remounts its view (fresh chat). */
export const newChatRequests = writable(0);

/** `GET /api/config` (null when the edge has no such route or it failed). */
export const appConfig = writable<AppConfig | null>(null);

export async function loadConfig(): Promise<AppConfig | null> {
  try {
    const c = await getAppConfig();
    appConfig.set(c);
    return c;
  } catch {
    appConfig.set(null);
    return null;
  }
}

export const APP_NAME_FALLBACK = 'Gatehouse';
