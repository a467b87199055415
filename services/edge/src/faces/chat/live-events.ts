import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DeliverPolicy, type ConsumerMessages } from 'nats';
import { ChatEvent, EVENTS_STREAM, EVENTS_SUBJECTS, type ChatIdentity } from '@gatehouse/contracts';
import { BusError, type Bus } from '@gatehouse/common';
import { headerValue } from '../../kit/index.ts';

/** The live stream's path: not an Open WebUI route (it pushes over socket.io at /ws instead). */
export const LIVE_EVENTS_PATH = '/api/v1/events/stream';
/** An SSE comment this often keeps proxies from closing an idle stream and notices a dead socket. */
export const LIVE_HEARTBEAT_MS = 15_000;
/** Open streams per user on one edge; one more answers 429 (a tab per stream, so a generous cap). */
export const LIVE_MAX_PER_USER = 16;
/** Messages the consumer pulls ahead of the socket; the socket's back-pressure stops the pulling. */
const PULL_AHEAD = 64;

export interface LiveEventsOptions {
  bus: () => Bus;
  authenticate: (req: FastifyRequest, reply: FastifyReply) => Promise<ChatIdentity>;
  /** Still valid? Checked at each heartbeat, so a signed-out session's stream ends within one. */
  stillValid: (req: FastifyRequest) => Promise<boolean>;
  heartbeatMs?: number;
}

/**
 * Another user's changes that reach the users the event names in `data.user_ids` (or `*`): a folder
 * shared, unshared, renamed, moved or deleted (its grantees), a group's membership changed or the
 * group deleted (the members it concerns: folders shared with the group come and go with it).
 */
const NAMED_AUDIENCE = new Set([
  'folder.access_updated', 'folder.updated', 'folder.parent_updated', 'folder.deleted',
  'group.member_added', 'group.member_removed', 'group.updated', 'group.deleted',
]);
/** An admin's change to a user's own account, shown to that user (their tab follows a new role, or signs out). */
const ABOUT_SUBJECT = new Set(['user.role_updated', 'user.updated', 'user.deleted']);

/** Someone else's event as a non-actor sees it: the actor's id and name only. */
function asBystander(ev: ChatEvent, data: ChatEvent['data']): ChatEvent {
  const actor = ev.actor && { ...ev.actor, email: null, role: null };
  return { ...ev, actor, data };
}

/**
 * Whether `userId` may see `ev`, and what of it: their own changes (actor is them) as they are;
 * an event of NAMED_AUDIENCE whose `user_ids` name them (or `*`), without the other users' ids; an
 * admin's change to their own account (ABOUT_SUBJECT, subject is them). The actor of the last two is
 * reduced to id and name. Anything else — another user's change — is never forwarded.
 */
export function visibleEvent(ev: ChatEvent, userId: string): ChatEvent | undefined {
  if (ev.actor?.id === userId) return ev;
  if (NAMED_AUDIENCE.has(ev.event)) {
    const ids = (ev.data as { user_ids?: unknown }).user_ids;
    if (Array.isArray(ids) && (ids.includes(userId) || ids.includes('*'))) {
      const { user_ids: _omit, ...data } = ev.data;
      return asBystander(ev, data);
    }
    return undefined;
  }
  if (ABOUT_SUBJECT.has(ev.event) && ev.subject?.type === 'user' && ev.subject.id === userId) return asBystander(ev, ev.data);
  return undefined;
}

/** `Last-Event-ID` (header, or `?last_event_id=` for a manual reconnect): a stream sequence. */
function lastEventId(req: FastifyRequest): number | undefined {
  const raw = headerValue(req.headers, 'last-event-id') ?? (req.query as Record<string, unknown> | undefined)?.last_event_id;
  const v = Array.isArray(raw) ? raw[0] : raw;
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || !/^\d{1,15}$/.test(v)) throw new BusError(400, 'Last-Event-ID must be a stream sequence number');
  return Number(v);
}

/**
 * `GET /api/v1/events/stream`: the caller's own chat events as Server-Sent Events. One ordered
 * (ephemeral) JetStream consumer per connection on the EVENTS stream, from the sequence after
 * `Last-Event-ID` or from now; `id:` is the stream sequence, `event:` the event name, `data:` the
 * event. The consumer is deleted when the client goes away.
 */
export function registerLiveEvents(app: FastifyInstance, opts: LiveEventsOptions): void {
  const open = new Map<string, number>();
  const heartbeatMs = opts.heartbeatMs ?? LIVE_HEARTBEAT_MS;

  app.get(LIVE_EVENTS_PATH, async (req, reply) => {
    const identity = await opts.authenticate(req, reply);
    const after = lastEventId(req);
    const bus = opts.bus();
    const userId = identity.userId;
    if ((open.get(userId) ?? 0) >= LIVE_MAX_PER_USER) throw new BusError(429, 'Too many open event streams for this user.');

    const consumer = await bus.js.consumers
      .get(bus.bucket(EVENTS_STREAM), {
        filterSubjects: bus.subject(EVENTS_SUBJECTS),
        ...(after === undefined ? { deliver_policy: DeliverPolicy.New } : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 }),
        // Milliseconds here; the server drops a consumer whose edge died without deleting it.
        inactive_threshold: 60_000,
      })
      .catch(() => {
        throw new BusError(503, 'The event stream is not available yet; try again shortly.');
      });
    let messages: ConsumerMessages;
    try {
      messages = await consumer.consume({ max_messages: PULL_AHEAD });
    } catch {
      throw new BusError(503, 'The event stream is not available yet; try again shortly.');
    }

    open.set(userId, (open.get(userId) ?? 0) + 1);
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
    });
    // Tells the client the consumer exists: anything published from here on reaches it.
    res.write(': connected\nretry: 2000\n\n');

    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      clearInterval(beat);
      clearTimeout(expiry);
      open.set(userId, (open.get(userId) ?? 1) - 1);
      if (!open.get(userId)) open.delete(userId);
      void messages.close().catch(() => undefined);
      void consumer.delete().catch(() => undefined);
      if (!res.writableEnded) res.end();
    };
    res.on('close', close);
    res.on('error', close);
    const beat = setInterval(() => {
      void opts.stillValid(req).then(
        (ok) => (ok ? res.write(': heartbeat\n\n') : close()),
        () => close(),
      );
    }, heartbeatMs);
    // The session ends with its token: the client's next reconnect gets the 401.
    const exp = identity.expiresAt;
    const expiry = exp ? setTimeout(close, Math.max(0, Math.min(exp * 1000 - Date.now(), 2 ** 31 - 1))) : undefined;

    void (async () => {
      try {
        for await (const m of messages) {
          if (closed) break;
          let ev: ChatEvent;
          try {
            ev = ChatEvent.parse(m.json());
          } catch {
            continue;
          }
          const shown = visibleEvent(ev, userId);
          if (!shown) continue;
          const frame = `id: ${m.seq}\nevent: ${shown.event}\ndata: ${JSON.stringify(shown)}\n\n`;
          // A slow client holds the consumer (no further pulls) rather than growing a buffer.
          if (!res.write(frame)) await new Promise<void>((done) => {
            const off = () => {
              res.off('drain', off);
              res.off('close', off);
              done();
            };
            res.on('drain', off);
            res.on('close', off);
          });
          // The account is gone: nothing more is theirs to see (the client signs out on this frame).
          if (shown.event === 'user.deleted' && shown.subject?.id === userId) {
            close();
            break;
          }
        }
      } catch (err) {
        req.log.warn({ err: (err as Error).message }, 'live event stream failed');
      } finally {
        close();
      }
    })();
  });
}
