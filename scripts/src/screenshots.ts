import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * Screenshots of the web UI's main screens (sign-in, change log, model selector, a chat while it
 * thinks and with its answer, the sidebar after a reload; the knowledge pages wide/narrow ×
 * light/dark as knowledge-*.png) into docs/screenshots/*.png: runs the browser suite's
 * conversation and knowledge tests (tests/browser/chat.test.ts, knowledge.test.ts; real stack +
 * chromium) with SCREENSHOTS_DIR set. The admin pages (users, settings general and connections;
 * wide/narrow × light/dark as admin-*.png) come from tests/browser/admin.test.ts; the share dialog, the
 * shared page, the rating form and an answer with its Generation Info and rating (chat-share-*, chat-shared-page-*, chat-rate-comment-*,
 * chat-reply-info-*) from tests/browser/chat-share.test.ts. The Settings modal's sections (settings-*.png) come from settings-modal.test.ts; Add/Edit User,
 * Groups, the editable Connections and Evaluations (admin-users-add, admin-users-edited,
 * admin-groups*, admin-settings-connections-edit, admin-evaluations-*) from
 * admin-users-groups.test.ts. Needs what scripts/test needs (NATS, Postgres, Redis, chromium).
 *
 *   node --import tsx scripts/src/screenshots.ts
 */
const root = join(import.meta.dirname, '..', '..');
const r = spawnSync(join(root, 'node_modules', '.bin', 'vitest'), ['run', '--project', 'browser', 'tests/browser/chat.test.ts', 'tests/browser/admin.test.ts', 'tests/browser/admin-webhooks.test.ts', 'tests/browser/knowledge.test.ts', 'tests/browser/chat-share.test.ts', 'tests/browser/settings-modal.test.ts', 'tests/browser/admin-users-groups.test.ts'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, SCREENSHOTS_DIR: join(root, 'docs', 'screenshots') },
});
process.exit(r.status ?? 1);
