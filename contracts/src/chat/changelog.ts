/**
 * The Open WebUI release the chat face speaks (`GET /api/version`, `/api/config`), and Gatehouse's
 * own release notes in the shape Open WebUI's `GET /api/changelog` answers (main.py parses its
 * CHANGELOG.md into an object keyed by version, newest first, and serves the 5 latest): each
 * version has a `date` and sections (`added`, `fixed`, `changed`, …) of `{title, content}` items.
 * The web UI's change-log dialog reads it; keep the newest entry's key equal to the version.
 */
export const CHAT_PLATFORM_VERSION = '0.10.2';

export interface ChangelogItem {
  title: string;
  content: string;
}
export type ChangelogEntry = { date: string } & Partial<Record<'added' | 'fixed' | 'changed' | 'removed' | 'security', ChangelogItem[]>>;

export const CHANGELOG: Record<string, ChangelogEntry> = {
  '0.10.2': {
    date: '2026-11-24',
    added: [
      { title: 'Web UI', content: 'The chat platform has a web UI on :8080: sign-in, chats in the sidebar, a model selector, streamed answers with their reasoning, and Python that runs in a sandboxed frame.' },
      { title: 'Release notes', content: 'GET /api/changelog and GET /api/config answer in Open WebUI\'s shape, so its front end finds what it expects.' },
    ],
  },
  '0.10.1': {
    date: '2026-11-20',
    added: [
      { title: 'Stored chats', content: 'Chats, messages, tags and search as Open WebUI 0.10; replies are stored as they stream.' },
      { title: 'Context compaction', content: 'Long chats are summarised by the task model and continue from the checkpoint.' },
    ],
    fixed: [{ title: 'Shared read-only chats', content: 'A chat in a folder shared for reading opens read-only instead of signing the user out.' }],
  },
  '0.10.0': {
    date: '2026-11-12',
    added: [
      { title: 'Accounts and sessions', content: 'Sign-up, sign-in with a rate limit, admin user management, groups, memories and folders with grants.' },
      { title: 'Events', content: 'Every change is published once on JetStream in Open WebUI\'s event envelope.' },
    ],
  },
};

/** Open WebUI serves the 5 newest versions. */
export function latestChangelog(n = 5): Record<string, ChangelogEntry> {
  return Object.fromEntries(Object.entries(CHANGELOG).slice(0, n));
}
