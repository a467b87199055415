// What the chat menus (the top bar's `#chat-context-menu-button` and a sidebar item's menu) do
// beyond the sidebar's own actions: download in a format, clone and open the copy.
import { getChat } from '../apis/chats/index.ts';
import { cloneChat } from '../apis/sharing/index.ts';
import { navigate } from '../router.ts';
import { refreshChats } from '../stores.ts';
import { exportChat, type ExportFormat } from './export.ts';

/** The download entries, as Open WebUI's Download submenu (plus Markdown). */
export const DOWNLOADS: { format: ExportFormat; label: string }[] = [
  { format: 'json', label: 'Export chat (.json)' },
  { format: 'txt', label: 'Plain text (.txt)' },
  { format: 'md', label: 'Markdown (.md)' },
  { format: 'pdf', label: 'PDF document (.pdf)' },
];

/** Read the stored chat and download it (PDF: the browser's print dialog). */
export async function downloadChat(id: string, format: ExportFormat): Promise<void> {
  exportChat(await getChat(id), format);
}

/** A copy of my chat ("Clone of …"), opened. */
export async function cloneAndOpen(id: string): Promise<string> {
  const copy = await cloneChat(id);
  await refreshChats();
  navigate(`/c/${copy.id}`);
  return copy.id;
}
