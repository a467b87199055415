// The Settings modal's state: which tab is open (null: closed) and the user's UI settings — Open
// WebUI's `settings.ui`, kept on the server (`/api/v1/users/user/settings`), so a reload or another
// browser gets them back. The theme is also kept in localStorage (it must apply before the session
// answers); the settings' copy wins once they are loaded.
import { get, writable } from 'svelte/store';
import { getUserSettings, updateUserSettings, type UiSettings } from '../apis/users/index.ts';
import { theme, type Theme } from '../ui.ts';

export const SETTINGS_TABS = ['general', 'interface', 'personalization', 'audio', 'chats', 'account', 'about'] as const;
export type SettingsTab = (typeof SETTINGS_TABS)[number];
export const isSettingsTab = (s: string | undefined): s is SettingsTab => !!s && (SETTINGS_TABS as readonly string[]).includes(s);

/** The open tab, or null when the modal is closed. */
export const settingsTab = writable<SettingsTab | null>(null);
/** Where closing goes: a `/settings` visit leaves for the chat page, the user menu stays put. */
export const settingsCloseTo = writable<string | null>(null);

export function openSettings(tab: SettingsTab = 'general', closeTo: string | null = null): void {
  settingsCloseTo.set(closeTo);
  settingsTab.set(tab);
}

/** The stored `ui` settings (empty until loaded or when none were saved). */
export const uiSettings = writable<UiSettings>({});
let loadedFor: string | null = null;

const THEMES: readonly Theme[] = ['system', 'light', 'dark'];

/** Read the stored settings once per user; the stored theme replaces the local one. */
export async function loadUiSettings(userId: string, force = false): Promise<UiSettings> {
  if (loadedFor === userId && !force) return get(uiSettings);
  const stored = await getUserSettings();
  const ui = (stored?.ui && typeof stored.ui === 'object' ? stored.ui : {}) as UiSettings;
  loadedFor = userId;
  uiSettings.set(ui);
  if (typeof ui['theme'] === 'string' && (THEMES as readonly string[]).includes(ui['theme'])) theme.set(ui['theme'] as Theme);
  return ui;
}

/** Merge `patch` into the `ui` settings and store the whole object (Open WebUI's saveSettings). */
export async function saveUiSettings(patch: UiSettings): Promise<UiSettings> {
  const next = { ...get(uiSettings), ...patch };
  const saved = await updateUserSettings({ ui: next });
  const ui = (saved?.ui && typeof saved.ui === 'object' ? saved.ui : next) as UiSettings;
  uiSettings.set(ui);
  return ui;
}

/** A string setting, or `fallback`. */
export const str = (ui: UiSettings, key: string, fallback = ''): string => (typeof ui[key] === 'string' ? (ui[key] as string) : fallback);
export const bool = (ui: UiSettings, key: string, fallback = false): boolean => (typeof ui[key] === 'boolean' ? (ui[key] as boolean) : fallback);
export const obj = (ui: UiSettings, key: string): Record<string, unknown> =>
  ui[key] && typeof ui[key] === 'object' && !Array.isArray(ui[key]) ? (ui[key] as Record<string, unknown>) : {};

/**
 * What a completion takes from Settings → General, as Open WebUI's chat sends it: the system
 * prompt (a first `system` message when the chat has none) and the default parameters (merged
 * under the chat's own). For the chat view; empty when nothing was saved.
 */
export function completionDefaults(): { system: string; params: Record<string, unknown> } {
  const ui = get(uiSettings);
  return { system: str(ui, 'system'), params: obj(ui, 'params') };
}
