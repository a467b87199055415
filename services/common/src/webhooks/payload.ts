import type { ChatEvent } from '@gatehouse/contracts';

/**
 * The body a receiver gets, as Open WebUI 0.10.2's post_webhook (utils/webhook.py) shapes it by
 * URL: Slack and Google Chat `{text}`, Discord `{content}` (at most 2000 characters), Microsoft
 * Teams a MessageCard, any other URL the raw event envelope.
 */
export const DISCORD_MAX = 2000;
const PLATFORM = 'Open WebUI';
const VERSION = '0.10.2';

/** Open WebUI's message: the event's message (or its name) and the subject id in parentheses. */
export function eventMessage(ev: Pick<ChatEvent, 'event' | 'message' | 'subject'>): string {
  const base = ev.message ?? `Event: ${ev.event}`;
  return ev.subject?.id ? `${base} (${ev.subject.id})` : base;
}

export function webhookBody(url: string, ev: ChatEvent): unknown {
  const message = eventMessage(ev);
  if (url.includes('https://hooks.slack.com') || url.includes('https://chat.googleapis.com')) return { text: message };
  if (url.includes('https://discord.com/api/webhooks')) {
    return { content: message.length < DISCORD_MAX ? message : `${message.slice(0, DISCORD_MAX - 20)}... (truncated)` };
  }
  if (url.includes('webhook.office.com')) {
    const facts = [
      { name: 'event', value: ev.event },
      ...(ev.subject ? [{ name: 'subject', value: `${ev.subject.type}${ev.subject.id ? ` ${ev.subject.id}` : ''}` }] : []),
      ...(ev.actor ? [{ name: 'actor', value: ev.actor.email ?? ev.actor.id }] : []),
      ...Object.entries(ev.data).map(([name, v]) => ({ name, value: typeof v === 'string' ? v : JSON.stringify(v) })),
    ];
    return {
      '@type': 'MessageCard',
      '@context': 'http://schema.org/extensions',
      themeColor: '0076D7',
      summary: message,
      sections: [{ activityTitle: message, activitySubtitle: `${PLATFORM} (${VERSION}) - ${ev.event}`, facts, markdown: true }],
    };
  }
  return ev;
}
