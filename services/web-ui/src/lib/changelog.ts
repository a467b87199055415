// Open WebUI's change log (`GET /api/changelog`): an object keyed by version, newest first, each
// with a `date` and sections (`added`, `fixed`, …) of {title, content} items.
import { ApiError } from './apis/client.ts';
import { getChangelog } from './apis/configs/index.ts';

export interface ChangelogItem {
  title: string;
  content: string;
}
export interface ChangelogEntry {
  date?: string;
  [section: string]: ChangelogItem[] | string | undefined;
}
export type Changelog = Record<string, ChangelogEntry>;

function parts(v: string): number[] {
  return v.split(/[.\-+]/).map((x) => (Number.isFinite(Number(x)) ? Number(x) : 0));
}
export function compareVersions(a: string, b: string): number {
  const pa = parts(a);
  const pb = parts(b);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d) return d;
  }
  return 0;
}

/** Versions newest first. */
export function versions(log: Changelog): string[] {
  return Object.keys(log).sort((a, b) => compareVersions(b, a));
}

/** Sections of one entry, in their order, without `date`. */
export function sections(entry: ChangelogEntry): [string, ChangelogItem[]][] {
  return Object.entries(entry).filter((e): e is [string, ChangelogItem[]] => e[0] !== 'date' && Array.isArray(e[1]));
}

/** localStorage key remembering that `userId` has seen `version`'s notes. */
export function seenKey(userId: string, version: string): string {
  return `changelog-seen:${userId}:${version}`;
}

export function hasSeen(userId: string, version: string): boolean {
  try {
    return localStorage.getItem(seenKey(userId, version)) !== null;
  } catch {
    return false;
  }
}

export function markSeen(userId: string, version: string): void {
  try {
    localStorage.setItem(seenKey(userId, version), String(Date.now()));
  } catch {
    /* storage unavailable: it shows again next time */
  }
}

/** The change log, or null when the route is missing (404) or anything else failed. */
export async function fetchChangelog(): Promise<Changelog | null> {
  try {
    const log = await getChangelog();
    if (!log || typeof log !== 'object' || Array.isArray(log) || Object.keys(log).length === 0) return null;
    return log;
  } catch (err) {
    if (err instanceof ApiError) return null;
    return null;
  }
}
