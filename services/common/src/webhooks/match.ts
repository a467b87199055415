import { CHAT_EVENTS, PLATFORM_EVENTS, type ChatEvent } from '@gatehouse/contracts';

/**
 * Which events a webhook receives (Open WebUI 0.10.2 events.py L698-791): it is enabled, one of
 * its patterns matches (`*`, `<prefix>.*`, or the exact name), and its targets admit the event
 * (null: every event; `[]`: only events that concern no user; else the event's users — actor,
 * a user subject, `data.user_id` / `data.user_ids` — meet the target users or the members of the
 * target groups, resolved by whoever loads the webhook).
 */
export interface MatchableWebhook {
  enabled: boolean;
  events: string[];
  /** null = every event; otherwise the user ids the targets stand for (groups expanded). */
  targetUsers: Set<string> | null;
  /** targets was `[]`: only events that concern no user. */
  targetsEmpty: boolean;
}

const KNOWN = new Set([...Object.keys(CHAT_EVENTS), ...Object.keys(PLATFORM_EVENTS)]);
const RESOURCES = new Set([...KNOWN].map((n) => n.split('.')[0]!));

/** Null when the pattern is acceptable, else why not (the registry's 400). */
export function patternProblem(p: string): string | null {
  if (p === '*') return null;
  if (!/^[a-z_]+(\.[a-z_]+)*(\.\*)?$/.test(p)) return `Invalid event pattern: ${p}`;
  if (p.endsWith('.*')) {
    const prefix = p.slice(0, -2);
    return [...KNOWN].some((n) => n.startsWith(`${prefix}.`)) || RESOURCES.has(prefix) ? null : `Unknown event pattern: ${p}`;
  }
  return KNOWN.has(p) ? null : `Unknown event: ${p}`;
}

export function patternMatches(pattern: string, event: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return event.startsWith(pattern.slice(0, -1));
  return pattern === event;
}

/** The users an event concerns. */
export function eventUsers(ev: Pick<ChatEvent, 'actor' | 'subject' | 'data'>): string[] {
  const out = new Set<string>();
  if (ev.actor?.id) out.add(ev.actor.id);
  if (ev.subject?.type === 'user' && ev.subject.id) out.add(ev.subject.id);
  const d = ev.data ?? {};
  if (typeof d.user_id === 'string') out.add(d.user_id);
  if (Array.isArray(d.user_ids)) for (const u of d.user_ids) if (typeof u === 'string') out.add(u);
  return [...out];
}

export function webhookMatches(w: MatchableWebhook, ev: Pick<ChatEvent, 'event' | 'actor' | 'subject' | 'data'>): boolean {
  if (!w.enabled) return false;
  if (!w.events.some((p) => patternMatches(p, ev.event))) return false;
  if (w.targetUsers === null) return true;
  const users = eventUsers(ev);
  if (w.targetsEmpty) return users.length === 0;
  return users.some((u) => w.targetUsers!.has(u));
}
