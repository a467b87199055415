import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream } from '../../scripts/src/fake-upstreams/common.ts';
import { chatClient, chatDb, type Account } from './chat-fixture.ts';

/**
 * A published Open WebUI client against the chat face, unchanged: `OpenWebUIClient.chat()` of the
 * PyPI package `openwebui-chat-client` (github.com/Fu-Jie/openwebui-chat-client,
 * openwebui_chat_client/openwebui_chat_client.py — `__init__` → `list_models`, `chat` →
 * `_find_or_create_chat_by_title` (`_search_latest_chat_by_title`, `_create_new_chat`,
 * `_load_chat_details`), `get_folder_id_by_name` / `create_folder`, `move_chat_to_folder`, `_ask`
 * (`_build_linear_history_for_api`, `_get_model_completion`, `_build_linear_history_for_storage`,
 * `_update_remote_chat`), `set_chat_tags`). `ClientReplay` below makes the same HTTP calls in the
 * same order with the same bodies and reads the same fields, so a change on our side that would
 * break that client breaks this test. Unlike the client it throws on any error status (the client
 * logs some and carries on — a failed search would silently create a duplicate chat).
 *
 * The chat worker, the proxy worker's connection registry on a fake OpenAI server (`echo` answers
 * `echo: <last user text>`) and the edge run for real; the flow runs twice with the same title.
 */
const stack = new Stack();
const db = chatDb(stack);
const apiKey = newKey();
let edge: Edge;
let fake: FakeUpstream;
let user: Account;
const { signup, addUser } = chatClient(() => edge.chatUrl);

type Json = any;

/** The client's session: Bearer token, JSON bodies, `raise_for_status` on every answer. */
class ClientReplay {
  /** Every call made, as `METHOD path` (query included), in order. */
  readonly calls: string[] = [];
  chatId: string | null = null;
  chatObjectFromServer: Json = null;
  modelId: string;
  availableModelIds: string[] = [];

  private constructor(private readonly baseUrl: string, private readonly token: string, private readonly defaultModelId: string) {
    this.modelId = defaultModelId;
  }

  /** `OpenWebUIClient(base_url, token, default_model_id)`: lists the models on construction. */
  static async connect(baseUrl: string, token: string, defaultModelId: string): Promise<ClientReplay> {
    const c = new ClientReplay(baseUrl, token, defaultModelId);
    const data = await c.request('GET', '/api/models');
    // `list_models` insists on {"data": [...]}.
    expect(Array.isArray(data?.data)).toBe(true);
    c.availableModelIds = data.data.map((m: Json) => m.id);
    return c;
  }

  private async request(method: string, path: string, opts: { json?: unknown; params?: Record<string, string> } = {}): Promise<Json> {
    // requests encodes `params` as application/x-www-form-urlencoded (spaces as +), as URLSearchParams does.
    const url = path + (opts.params ? `?${new URLSearchParams(opts.params)}` : '');
    this.calls.push(`${method} ${url}`);
    const r = await fetch(this.baseUrl + url, {
      method,
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
      body: opts.json === undefined ? undefined : JSON.stringify(opts.json),
    });
    const text = await r.text();
    if (r.status >= 400) throw new Error(`${method} ${url} → ${r.status}: ${text}`);
    return text ? JSON.parse(text) : null;
  }

  /** `chat(question, chat_title, folder_name=…, tags=…)`, single model, not streamed. */
  async chat(question: string, chatTitle: string, opts: { folderName?: string; tags?: string[] } = {}) {
    this.modelId = this.defaultModelId;
    await this.findOrCreateChatByTitle(chatTitle);
    if (!this.chatId) return null;
    if (opts.folderName) {
      const folderId = (await this.getFolderIdByName(opts.folderName)) ?? (await this.createFolder(opts.folderName));
      if (folderId && this.chatObjectFromServer.folder_id !== folderId) await this.moveChatToFolder(this.chatId, folderId);
    }
    const [response, messageId] = await this.ask(question);
    if (!response) return null;
    if (opts.tags?.length) await this.setChatTags(this.chatId, opts.tags);
    return { response, chat_id: this.chatId, message_id: messageId };
  }

  private async findOrCreateChatByTitle(title: string) {
    const existing = await this.searchLatestChatByTitle(title);
    if (existing) {
      await this.loadChatDetails(existing.id);
    } else {
      const newId = await this.createNewChat(title);
      if (newId) await this.loadChatDetails(newId);
    }
  }

  private async searchLatestChatByTitle(title: string): Promise<Json | null> {
    const candidates: Json[] = await this.request('GET', '/api/v1/chats/search', { params: { text: title } });
    const matching = candidates.filter((c) => c.title === title);
    if (!matching.length) return null;
    // Python's sort is stable: equal updated_at keep the server's order.
    matching.sort((a, b) => (b.updated_at ?? 0) - (a.updated_at ?? 0));
    return matching[0];
  }

  private async createNewChat(title: string): Promise<string | null> {
    const created = await this.request('POST', '/api/v1/chats/new', { json: { chat: { title } } });
    return created.id ?? null;
  }

  private async loadChatDetails(chatId: string) {
    const details = await this.request('GET', `/api/v1/chats/${chatId}`);
    if (!details) return null;
    this.chatId = chatId;
    this.chatObjectFromServer = details;
    details.chat ??= {};
    details.chat.history ??= { messages: {}, currentId: null };
    const models = details.chat.models ?? [];
    this.modelId = Array.isArray(models) && models.length ? models[0] : this.defaultModelId;
    return details;
  }

  private async createFolder(name: string): Promise<string | null> {
    await this.request('POST', '/api/v1/folders/', { json: { name } });
    return this.getFolderIdByName(name);
  }

  private async getFolderIdByName(name: string): Promise<string | null> {
    const folders: Json[] = await this.request('GET', '/api/v1/folders/');
    return folders.find((f) => f.name === name)?.id ?? null;
  }

  private async moveChatToFolder(chatId: string, folderId: string) {
    await this.request('POST', `/api/v1/chats/${chatId}/folder`, { json: { folder_id: folderId } });
    this.chatObjectFromServer.folder_id = folderId;
  }

  private async ask(question: string): Promise<[string | null, string | null]> {
    const chatCore = this.chatObjectFromServer.chat;
    chatCore.models = [this.modelId];
    const apiMessages = this.buildLinearHistoryForApi(chatCore);
    apiMessages.push({ role: 'user', content: question });
    const completion = await this.request('POST', '/api/chat/completions', { json: { model: this.modelId, messages: apiMessages, stream: false } });
    const assistantContent: string = completion.choices[0].message.content;
    const sources = completion.sources ?? [];
    const now = Math.floor(Date.now() / 1000);
    const userMessageId = randomUUID();
    const lastMessageId = chatCore.history.currentId ?? null;
    chatCore.history.messages[userMessageId] = {
      id: userMessageId, parentId: lastMessageId, childrenIds: [], role: 'user', content: question, files: [], models: [this.modelId], timestamp: now,
    };
    if (lastMessageId) chatCore.history.messages[lastMessageId].childrenIds.push(userMessageId);
    const assistantMessageId = randomUUID();
    chatCore.history.messages[assistantMessageId] = {
      id: assistantMessageId, parentId: userMessageId, childrenIds: [], role: 'assistant', content: assistantContent, model: this.modelId,
      modelName: this.modelId.split(':')[0], timestamp: now, done: true, sources,
    };
    chatCore.history.messages[userMessageId].childrenIds.push(assistantMessageId);
    chatCore.history.currentId = assistantMessageId;
    chatCore.messages = this.buildLinearHistoryForStorage(chatCore, assistantMessageId);
    chatCore.models = [this.modelId];
    chatCore.files ??= [];
    await this.request('POST', `/api/v1/chats/${this.chatId}`, { json: { chat: chatCore } });
    return [assistantContent, assistantMessageId];
  }

  private buildLinearHistoryForApi(chatCore: Json): { role: string; content: unknown }[] {
    const out: { role: string; content: unknown }[] = [];
    const messages = chatCore.history?.messages ?? {};
    let currentId = chatCore.history?.currentId;
    while (currentId && messages[currentId]) {
      const msg = messages[currentId];
      // Messages with files go as content blocks (text, then images); none here have any.
      out.unshift({ role: msg.role, content: msg.files?.length ? [{ type: 'text', text: msg.content }] : msg.content });
      currentId = msg.parentId;
    }
    return out;
  }

  private buildLinearHistoryForStorage(chatCore: Json, startId: string): Json[] {
    const out: Json[] = [];
    const messages = chatCore.history?.messages ?? {};
    let currentId: string | null = startId;
    while (currentId && messages[currentId]) {
      out.unshift(messages[currentId]);
      currentId = messages[currentId].parentId;
    }
    return out;
  }

  private async setChatTags(chatId: string, tags: string[]) {
    const existing = new Set((await this.request('GET', `/api/v1/chats/${chatId}/tags`)).map((t: Json) => t.name));
    for (const name of tags) if (!existing.has(name)) await this.request('POST', `/api/v1/chats/${chatId}/tags`, { json: { name } });
  }
}

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey });
  await stack.startProxyWorker({ OPENAI_API_BASE_URLS: fake.url, OPENAI_API_KEYS: apiKey, ENABLE_OLLAMA_API: 'false' });
  await stack.startChatWorker();
  edge = await stack.startEdge({ EDGE_FACES: 'chat' });
  const admin = await signup();
  user = await addUser(admin, 'Script');
});
afterAll(async () => {
  await db.end({ timeout: 5 });
  await stack.close();
  await fake?.close();
});

describe('openwebui-chat-client OpenWebUIClient.chat()', () => {
  const title = `Compat run ${randomUUID().slice(0, 8)}`;
  const folderName = `Client Folder ${randomUUID().slice(0, 4)}`;
  let chatId: string;
  let folderId: string;
  let first: { response: string; chat_id: string; message_id: string | null };

  it('first run: searches, creates the chat, files it in a new folder, asks, saves the history, tags it', async () => {
    const client = await ClientReplay.connect(edge.chatUrl, user.token, 'echo');
    expect(client.availableModelIds).toContain('echo');
    const out = await client.chat('What is the capital of France?', title, { folderName, tags: ['compat', 'Client Run'] });
    expect(out).not.toBeNull();
    first = out!;
    chatId = first.chat_id;
    expect(first.response).toBe('echo: What is the capital of France?');
    folderId = client.chatObjectFromServer.folder_id;
    const q = new URLSearchParams({ text: title });
    expect(client.calls).toEqual([
      'GET /api/models',
      `GET /api/v1/chats/search?${q}`,
      'POST /api/v1/chats/new',
      `GET /api/v1/chats/${chatId}`,
      'GET /api/v1/folders/',
      'POST /api/v1/folders/',
      'GET /api/v1/folders/',
      `POST /api/v1/chats/${chatId}/folder`,
      'POST /api/chat/completions',
      `POST /api/v1/chats/${chatId}`,
      `GET /api/v1/chats/${chatId}/tags`,
      `POST /api/v1/chats/${chatId}/tags`,
      `POST /api/v1/chats/${chatId}/tags`,
    ]);
  });

  it('second run, same title: finds the first chat through /search, continues its thread, adds only the missing tag', async () => {
    const client = await ClientReplay.connect(edge.chatUrl, user.token, 'echo');
    const out = await client.chat('And of Italy?', title, { folderName, tags: ['Client Run', 'second'] });
    expect(out).toMatchObject({ response: 'echo: And of Italy?', chat_id: chatId });
    // Found, not created; already in the folder, so not moved again; one tag already there.
    expect(client.calls).toEqual([
      'GET /api/models',
      `GET /api/v1/chats/search?${new URLSearchParams({ text: title })}`,
      `GET /api/v1/chats/${chatId}`,
      'GET /api/v1/folders/',
      'POST /api/chat/completions',
      `POST /api/v1/chats/${chatId}`,
      `GET /api/v1/chats/${chatId}/tags`,
      `POST /api/v1/chats/${chatId}/tags`,
    ]);
    // The second question went upstream with the first exchange before it.
    const sent = [...fake.requests].reverse().find((r) => r.method === 'POST' && r.raw.toString('utf8').includes('And of Italy?'));
    expect((sent?.json as Json)?.messages).toEqual([
      { role: 'user', content: 'What is the capital of France?' },
      { role: 'assistant', content: 'echo: What is the capital of France?' },
      { role: 'user', content: 'And of Italy?' },
    ]);
  });

  it('left one chat holding both turns with their parent links, in the folder, with the tags', async () => {
    const r = await fetch(`${edge.chatUrl}/api/v1/chats/${chatId}`, { headers: { authorization: `Bearer ${user.token}` } });
    expect(r.status).toBe(200);
    const stored: Json = await r.json();
    expect(stored).toMatchObject({ id: chatId, title, folder_id: folderId, archived: false, chat: { title, models: ['echo'] } });
    const messages: Record<string, Json> = stored.chat.history.messages;
    expect(Object.keys(messages)).toHaveLength(4);
    const a2 = messages[stored.chat.history.currentId];
    const u2 = messages[a2.parentId];
    const a1 = messages[u2.parentId];
    const u1 = messages[a1.parentId];
    expect([u1.content, a1.content, u2.content, a2.content]).toEqual([
      'What is the capital of France?', 'echo: What is the capital of France?', 'And of Italy?', 'echo: And of Italy?',
    ]);
    expect(u1.parentId).toBeNull();
    expect([u1.childrenIds, a1.childrenIds, u2.childrenIds, a2.childrenIds]).toEqual([[a1.id], [u2.id], [a2.id], []]);
    expect(a1.id).toBe(first.message_id);
    expect(stored.chat.messages.map((m: Json) => m.id)).toEqual([u1.id, a1.id, u2.id, a2.id]);
    // The rows mirror the links.
    const rows = await db<{ id: string; parent_id: string | null; role: string }[]>`select id, parent_id, role from chat_message where chat_id = ${chatId}`;
    expect(Object.fromEntries(rows.map((x) => [x.id, [x.role, x.parent_id]]))).toEqual({
      [u1.id]: ['user', null], [a1.id]: ['assistant', u1.id], [u2.id]: ['user', a1.id], [a2.id]: ['assistant', u2.id],
    });
    // One chat with that title (the second run did not make another), found by search and in the folder.
    const auth = { headers: { authorization: `Bearer ${user.token}` } };
    const found: Json[] = await (await fetch(`${edge.chatUrl}/api/v1/chats/search?${new URLSearchParams({ text: title })}`, auth)).json();
    expect(found.filter((c) => c.title === title).map((c) => c.id)).toEqual([chatId]);
    const inFolder: Json[] = await (await fetch(`${edge.chatUrl}/api/v1/chats/folder/${folderId}`, auth)).json();
    expect(inFolder.map((c) => c.id)).toEqual([chatId]);
    const tags: Json[] = await (await fetch(`${edge.chatUrl}/api/v1/chats/${chatId}/tags`, auth)).json();
    expect(tags).toEqual([
      { id: 'compat', name: 'compat', user_id: user.id, meta: null },
      { id: 'client_run', name: 'Client Run', user_id: user.id, meta: null },
      { id: 'second', name: 'second', user_id: user.id, meta: null },
    ]);
    const events = (await db<{ name: string; tag: string }[]>`
      select event ->> 'event' as name, event -> 'data' ->> 'tag' as tag from outbox
      where event -> 'subject' ->> 'id' = ${chatId} and event ->> 'event' like 'chat.tag_%' order by seq`).map((e) => [e.name, e.tag]);
    expect(events).toEqual([['chat.tag_added', 'compat'], ['chat.tag_added', 'Client Run'], ['chat.tag_added', 'second']]);
  });
});
