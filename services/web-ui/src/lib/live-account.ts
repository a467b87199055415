// An admin's change to the signed-in user's own account, as the live stream (live.ts) brings it:
// a new role or profile re-reads the session, so the shell follows at once (a pending user gets the
// activation notice, a former admin leaves the admin pages); a deleted account is signed out, and
// `accountNotice` tells the sign-in page why.
import { get, writable } from 'svelte/store';
import { loadSession, signOut, user } from './stores.ts';
import type { LiveChatEvent } from './live.ts';

/** Why the session ended, when it ended from elsewhere (the sign-in page shows it). */
export const accountNotice = writable<string>('');
export const ACCOUNT_DELETED_NOTICE = 'Your account has been deleted by an administrator.';

export function accountChange(ev: LiveChatEvent): void {
  // The edge forwards user.* events only to the user they are about; check anyway.
  if (ev.subject?.type !== 'user' || ev.subject.id !== get(user)?.id) return;
  if (ev.event === 'user.deleted') {
    accountNotice.set(ACCOUNT_DELETED_NOTICE);
    void signOut();
    return;
  }
  if (ev.event === 'user.role_updated' || ev.event === 'user.updated') void loadSession().catch(() => {});
}
