// The live event stream (`GET /api/v1/events/stream`, Server-Sent Events; the `token` cookie
// authenticates it, so EventSource can open it).
const STREAM = '/api/v1/events/stream';

/** The stream's URL; `lastEventId` resumes after that event (a reconnect made by hand). */
export const eventStreamUrl = (lastEventId?: string): string =>
  lastEventId ? `${STREAM}?last_event_id=${encodeURIComponent(lastEventId)}` : STREAM;
