import { describe, expect, it } from 'vitest';
import { CHAT_CATALOG, CHAT_OP_NAMES, CHAT_ROUTES, chatContracts } from './catalog.ts';
import { CHAT_COMPLETION_EVENTS, CHAT_COMPLETION_PATHS } from './completions.ts';
import { CHAT_EVENTS, eventParts, isChatEventName, parseChatEventData } from './events.ts';

describe('chat catalog', () => {
  it('names each operation chat.<op>, on its bus contract too', () => {
    for (const op of CHAT_OP_NAMES) {
      expect(CHAT_CATALOG[op].subject).toBe(`chat.${op}`);
      expect(chatContracts[op].subject).toBe(`chat.${op}`);
    }
  });

  it('gives every method and path to one operation only, completions included', () => {
    const keys = [...CHAT_ROUTES.map((r) => `${r.method} ${r.url}`), ...CHAT_COMPLETION_PATHS.map((p) => `POST ${p}`)];
    expect(new Set(keys).size).toBe(keys.length);
    expect(new Set(CHAT_ROUTES.map((r) => r.op))).toEqual(new Set(CHAT_OP_NAMES));
  });

  it('lists only catalog events, and every event is emitted by something', () => {
    const emitted = new Set<string>(CHAT_COMPLETION_EVENTS);
    for (const op of CHAT_OP_NAMES) for (const e of CHAT_CATALOG[op].events) emitted.add(e);
    for (const e of emitted) expect(isChatEventName(e)).toBe(true);
    expect([...emitted].sort()).toEqual(Object.keys(CHAT_EVENTS).sort());
  });
});

describe('chat event catalog', () => {
  it('splits a name into resource and operation at the first dot', () => {
    expect(eventParts('folder.access_updated')).toEqual({ resource: 'folder', operation: 'access_updated' });
    // Open WebUI's names may have more dots (knowledge.file.added): the resource is the first part.
    expect(eventParts('knowledge.file.added')).toEqual({ resource: 'knowledge', operation: 'file.added' });
    for (const name of Object.keys(CHAT_EVENTS)) expect(name).toMatch(/^[a-z]+(\.[a-z_]+)+$/);
  });

  it('reads a received event’s data by its name, and refuses unknown names and wrong data', () => {
    expect(parseChatEventData({ event: 'chat.tag_added', data: { tag: 'Work' } })).toEqual({ event: 'chat.tag_added', data: { tag: 'Work' } });
    expect(() => parseChatEventData({ event: 'chat.exploded', data: {} })).toThrow(/unknown chat event/);
    expect(() => parseChatEventData({ event: 'group.created', data: { name: 5 } })).toThrow();
  });
});
