import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { z } from 'zod';
import {
  CHAT_CATALOG,
  CHAT_COMPLETION_EVENTS,
  CHAT_OP_NAMES,
  chatCompletionsContract,
  chatContracts,
  OWUI_ERRORS,
  type ChatAuth,
  type ChatCatalogEntry,
  type ChatEventName,
  type ChatIdentity,
  type ChatOp,
  type ChatOpReply,
  type ChatOpRequest,
  apiKeyResolveContract,
  chatReplyWire,
  trustedSigninContract,
} from '@gatehouse/contracts';
import {
  BusError,
  announceFrom,
  ConfigReporter,
  keepAnnounced,
  loadRegistryValue,
  WEBHOOKS_CONFIG_GROUP,
  connectBus,
  createLogger,
  localFetchAllowed,
  DEFAULT_DATABASE_URL,
  DEFAULT_NATS_URL,
  LiveConfig,
  openConfigStore,
  parseEnv,
  requireMigrated,
  SchemaNotMigratedError,
  serveUntilSignalled,
  startWorker,
  type HandlerContext,
  serveMetricsFromEnv,
  serveCatalog,
  type CatalogHandlers,
} from '@gatehouse/common';
import { stripNul } from './access.ts';
import { checkedBody, now, type ChatHandlers, type FileBlobs, type OpContext, type UserRow } from './context.ts';
import { openChatDb, openSearchDb } from './db.ts';
import { OutboxRelay, ensureEventsStream } from './events/relay.ts';
import { Outbox, type Emit } from './events/outbox.ts';
import { LiveSettings, seedSettings, trackSettingsWrites, type Saved } from './config/settings.ts';
import { UserCache } from './user-cache.ts';
import { accountsOps } from './auth/accounts.ops.ts';
import { scryptParamsFromEnv, useScryptParams, verifyAgainstPlaceholder } from './auth/passwords.ts';
import { authLdapOps } from './auth/ldap.ops.ts';
import { authKeysOps, invalidateOnUserChange, resolveKey, trustedSignin } from './auth/api-keys.ops.ts';
import { groupsOps } from './groups/groups.ops.ts';
import { usersOps } from './users/users.ops.ts';
import { memoriesOps } from './memories/memories.ops.ts';
import { foldersOps } from './folders/folders.ops.ts';
import { chatsOps, compactOps } from './chats/chats.ops.ts';
import { chatTagsOps } from './chats/tags.ops.ts';
import { chatSharingOps } from './chats/sharing.ops.ts';
import { chatExportOps } from './chats/export.ops.ts';
import { arenaSettings, ModelRegistry, modelsOps } from './config/models.ops.ts';
import { configOps } from './config/config.ops.ts';
import { configStatusOps } from './config/status.ops.ts';
import { filesOps } from './knowledge/files.ops.ts';
import { knowledgeOps } from './knowledge/knowledge.ops.ts';
import { retrievalOps } from './retrieval/retrieval.ops.ts';
import { configureWebFetch, localWebFetchAllowed } from './retrieval/web-fetch.ts';
import { knowledgeExternalOps } from './knowledge/external.ops.ts';
import { migrateLegacyWebhook, webhooksOps } from './webhooks/webhooks.ops.ts';
import { authOAuthOps } from './auth/oauth.ops.ts';
import { userSettingsOps } from './users/settings.ops.ts';
import { effectiveArena, evaluationsOps } from './evaluations/evaluations.ops.ts';
import { promptsOps } from './prompts/prompts.ops.ts';
import { workspaceModelsOps } from './workspace-models/models.ops.ts';
import { audioOps } from './audio/audio.ops.ts';
import { completionsHandler } from './chats/completions.ops.ts';
import { coalescing } from './coalesce.ts';
import { memoryLimits } from './memories/system-context.ts';
import { createIngestQueue } from './knowledge/ingest-queue.ts';
import { localUploadStore } from './knowledge/uploads.ts';

/**
 * Chat platform worker (Open WebUI 0.10-compatible accounts, groups, memories, folders, chats,
 * models and completions): a NATS service in queue group `chat`, one endpoint per operation
 * (`chat.<op>`) plus the completions stream (`chat.completions.create`), on Postgres in its own
 * schema. It trusts the identity the edge verified, authorises each request with that user's
 * current row (user-cache.ts) and checks the role the operation needs. Every change and its event commit together (outbox).
 * Models and completions go through the proxy worker's connection registry (`llm.connections.*`):
 * this worker never opens an upstream connection itself.
 */
const env = parseEnv(
  z.object({
    NATS_URL: z.string().default(DEFAULT_NATS_URL),
    DATABASE_URL: z.string().default(DEFAULT_DATABASE_URL),
    /** Schema holding the platform's tables; tests use one per run. */
    CHAT_SCHEMA: z.string().regex(/^[a-z_][a-z0-9_]*$/, 'a lowercase SQL identifier').default('chat'),
    CHAT_DB_POOL: z.coerce.number().int().min(1).max(100).default(10),
    /** Connections of the pool knowledge searches run on (db.ts openSearchDb: generic plans). */
    CHAT_SEARCH_DB_POOL: z.coerce.number().int().min(1).max(100).default(4),
    /** Open WebUI's RAG_SYSTEM_CONTEXT: retrieved context goes after the system prompt (true) instead of before the user's message. */
    RAG_SYSTEM_CONTEXT: z
      .string()
      .default('false')
      .transform((v) => v.trim().toLowerCase() === 'true'),
    /** The upload store's directory (content-addressed bytes of uploaded files), shared with the ingest worker. */
    UPLOAD_DIR: z.string().default(join(import.meta.dirname, '..', '..', '..', '.state', 'uploads')),
    /** Open WebUI's per-file limit in MB (the edge enforces it while streaming; here for content updates). */
    RAG_FILE_MAX_SIZE: z.coerce.number().positive().default(100),
    /** Open WebUI's legacy single webhook: becomes webhook `default` receiving every event (webhooks/webhooks.ops.ts). */
    WEBHOOK_URL: z.string().optional(),
    /** Open WebUI's SSRF switch: webhooks may point at private and loopback addresses when true (old name as fallback). */
    ENABLE_LOCAL_WEB_FETCH: z.string().optional(),
    ENABLE_RAG_LOCAL_WEB_FETCH: z.string().optional(),
    /** How often (ms) each replica checks that the config bucket says what Postgres says, and re-reads its revision. */
    CONFIG_RECONCILE_MS: z.coerce.number().int().min(100).default(10_000),
    /** Open WebUI's admin switches (on unless "false"): every user's chats in GET /api/v1/chats/all/db, and admins reading others' chats (shares, /list/user/{id}). */
    ENABLE_ADMIN_EXPORT: z.string().default('true').transform((v) => v.trim().toLowerCase() === 'true'),
    ENABLE_ADMIN_CHAT_ACCESS: z.string().default('true').transform((v) => v.trim().toLowerCase() === 'true'),
    /** scrypt cost of new password hashes, N = 2^value (10..20, default 15; auth/passwords.ts checks it). */
    PASSWORD_SCRYPT_LOG2N: z.string().optional(),
  }),
);
// A bad PASSWORD_SCRYPT_LOG2N stops the worker here, not every sign-up.
useScryptParams(scryptParamsFromEnv(env));
// Compute the placeholder hash now, so the first unknown-email sign-in costs the same as the rest.
void verifyAgainstPlaceholder('').catch(() => undefined);
const log = createLogger('chat-worker');
// Prometheus metrics on METRICS_PORT when set (common/src/metrics.ts).
await serveMetricsFromEnv('chat-worker', log);
const instanceId = randomUUID();
const sql = openChatDb(env.DATABASE_URL, env.CHAT_SCHEMA, env.CHAT_DB_POOL);
const searchSql = openSearchDb(env.DATABASE_URL, env.CHAT_SCHEMA, env.CHAT_SEARCH_DB_POOL);
// The schema is migrated by the one runner (docs/migrations.md), never here: a worker that finds
// it behind says what to run and exits.
try {
  await requireMigrated(sql, { folder: 'chat', schema: env.CHAT_SCHEMA });
  const seeded = await seedSettings(sql, process.env, now());
  if (seeded.length) log.info({ seeded }, 'chat settings seeded');
  if (await migrateLegacyWebhook(sql, env.WEBHOOK_URL, now())) log.info('WEBHOOK_URL became webhook "default" (every event)');
} catch (err) {
  const why = err instanceof SchemaNotMigratedError ? err.message : `cannot read the chat schema (${(err as Error).message}); run scripts/start (it brings up Postgres with pgvector) or set DATABASE_URL`;
  process.stderr.write(`chat worker not started: ${why}\n`);
  process.exit(1);
}

const bus = await connectBus({ url: env.NATS_URL, name: 'chat-worker', log });
const channel = `${env.CHAT_SCHEMA}_outbox`;
const outbox = new Outbox(instanceId, channel);
const relay = new OutboxRelay(sql, bus, await ensureEventsStream(bus), channel, log);
await relay.start();
// Settings travel the config bucket (config/settings.ts LiveSettings); this replica reports the revision it runs.
const configStore = await openConfigStore(bus);
const settings = new LiveSettings(sql, `chat-worker ${instanceId}`, log, env.CONFIG_RECONCILE_MS);
await settings.start(configStore);
const configReporter = new ConfigReporter(configStore, 'chat-worker', log);
configReporter.track(settings.live);
await configReporter.start();
// Models come from the proxy worker's connection registry; the arena from the environment until
// an admin sets it (evaluations/config), then from the settings, applied live on every replica.
const envArena = arenaSettings(process.env, log);
const models = new ModelRegistry(bus, effectiveArena(envArena, await settings.get()));
settings.live.onChange((applied) => models.setArena(effectiveArena(envArena, applied.value)));
// The connections live with the proxy workers; this replica only drops its cached model list when they change.
const connectionsRevision = new LiveConfig<null>({ group: 'connections', parse: () => null, initial: null, log });
connectionsRevision.onChange(() => models.forget());
await connectionsRevision.follow(configStore);
configReporter.track(connectionsRevision);
// The webhook registry (group `webhooks`) is followed by the dispatchers; chat workers write it
// (webhooks/webhooks.ops.ts) and, as for settings, announce Postgres's state at start and check it every
// CONFIG_RECONCILE_MS, so a change whose announcement was lost still reaches the dispatchers.
await announceFrom(configStore, WEBHOOKS_CONFIG_GROUP, () => loadRegistryValue(sql), `chat-worker ${instanceId}`).catch((err) => log.warn({ err }, 'webhook registry not announced at start; the reconciler will'));
const webhooksReconciler = keepAnnounced(configStore, WEBHOOKS_CONFIG_GROUP, () => loadRegistryValue(sql), `chat-worker ${instanceId}`, env.CONFIG_RECONCILE_MS, log);
const llm = { bus, models };
const ingest = createIngestQueue(bus);
const blobs: FileBlobs = {
  uploads: localUploadStore(env.UPLOAD_DIR),
  bus,
  maxFileBytes: Math.floor(env.RAG_FILE_MAX_SIZE * 1024 * 1024),
  maxFileLabel: `${env.RAG_FILE_MAX_SIZE} MB`,
};

// Web fetch's SSRF rule (retrieval/web-fetch.ts): the same variables as the webhooks' guard.
configureWebFetch({ allowLocal: localWebFetchAllowed({ ENABLE_LOCAL_WEB_FETCH: env.ENABLE_LOCAL_WEB_FETCH, ENABLE_RAG_LOCAL_WEB_FETCH: env.ENABLE_RAG_LOCAL_WEB_FETCH }) });

/** One handler per operation of the catalog: a missing or unknown one does not compile. */
const HANDLERS = {
  ...accountsOps,
  ...authKeysOps,
  ...authLdapOps,
  ...usersOps,
  ...groupsOps,
  ...memoriesOps,
  ...foldersOps,
  ...chatsOps,
  ...compactOps(llm),
  ...chatTagsOps,
  ...chatSharingOps({ adminChatAccess: env.ENABLE_ADMIN_CHAT_ACCESS }),
  ...chatExportOps({ adminExport: env.ENABLE_ADMIN_EXPORT, adminChatAccess: env.ENABLE_ADMIN_CHAT_ACCESS }),
  ...modelsOps(models),
  ...configOps,
  ...configStatusOps(configStore),
  ...filesOps,
  ...knowledgeOps,
  ...knowledgeExternalOps,
  ...retrievalOps,
  ...webhooksOps({ allowLocal: localFetchAllowed({ ENABLE_LOCAL_WEB_FETCH: env.ENABLE_LOCAL_WEB_FETCH, ENABLE_RAG_LOCAL_WEB_FETCH: env.ENABLE_RAG_LOCAL_WEB_FETCH }), bus, config: configStore, by: `chat-worker ${instanceId}`, log }),
  ...authOAuthOps,
  ...userSettingsOps,
  ...evaluationsOps(envArena),
  ...audioOps,
  ...promptsOps,
  ...workspaceModelsOps,
} satisfies ChatHandlers;

const users = new UserCache(sql, `${env.CHAT_SCHEMA}_users`);
await users.start();

/** The caller the operation admits (Open WebUI's 401s otherwise); null for `none` operations. */
async function authorize(auth: ChatAuth, identity: ChatIdentity | null): Promise<UserRow | null> {
  if (auth === 'none') return null;
  if (!identity) throw new BusError(401, OWUI_ERRORS.notAuthenticated);
  // A deleted user's token dies with the user.
  const user = await users.get(identity.userId);
  if (!user) throw new BusError(401, OWUI_ERRORS.invalidToken);
  if (auth === 'verified' && user.role !== 'user' && user.role !== 'admin') throw new BusError(401, OWUI_ERRORS.accessProhibited);
  if (auth === 'admin' && user.role !== 'admin') throw new BusError(401, OWUI_ERRORS.accessProhibited);
  return user;
}

/** Emit for one operation: only the events its catalog entry lists (anything else is a bug). */
const emitFor =
  (name: string, allowed: readonly ChatEventName[]): Emit =>
  (tx, event, e) => {
    if (!allowed.includes(event)) throw new Error(`${name} emitted ${event}, which its catalog entry does not list`);
    return outbox.emitChecked(tx, event, e);
  };
/** The operation's context; its log lines and onward bus calls carry the request's trace (`hctx`, common/src/tracing.ts). */
const opContext = (user: UserRow | null, emit: Emit, hctx: HandlerContext, saved: Saved = { settings: false }): OpContext => ({
  sql,
  searchSql,
  user,
  settings: () => settings.get(),
  emit,
  // The request's child logger is made on first use: an operation that logs nothing costs nothing.
  get log() {
    return hctx.log;
  },
  trace: hctx,
  // Jobs queued for the ingest worker carry the request's trace too.
  get ingest() {
    return { enqueue: (fileIds: string[], o: { useContent?: boolean } = {}) => ingest.enqueue(fileIds, { ...o, trace: hctx }) };
  },
  blobs,
  saved,
});

/** What Postgres answers for a string holding \u0000: as text (character_not_in_repertoire) or in jsonb (untranslatable_character). */
const NUL_IN_TEXT = new Set(['22021', '22P05']);

const worker = await startWorker(bus, { name: 'chat', version: '1.0.0', description: 'Open WebUI-compatible chat platform' });

/**
 * One operation on the bus: the caller authorised for its entry, the body parsed by its form (the
 * one validation), its handler run, the reply checked against the entry's `reply`.
 */
function serveOp(op: ChatOp) {
  const entry: ChatCatalogEntry = CHAT_CATALOG[op];
  const form = entry.workerBody ?? entry.body;
  // ChatHandlers tied each handler to its entry; the body it gets is parsed by that entry's form below.
  const handler = HANDLERS[op] as unknown as (req: ChatOpRequest, ctx: OpContext) => Promise<ChatOpReply>;
  const emit = emitFor(op, entry.events);
  return async (raw: ChatOpRequest, hctx: HandlerContext): Promise<ChatOpReply> => {
    // Postgres refuses NUL in text: in an id or a query value it is dropped (the id then names
    // nothing: 404), and a body string holding one is the client's 400, never a 500.
    const req: ChatOpRequest = { ...raw, params: stripNul(raw.params), query: stripNul(raw.query), body: undefined };
    // An operation that saved settings announces them after its commit, before it answers.
    const saved: Saved = { settings: false };
    const reply = await trackSettingsWrites(
      saved,
      async () => {
        // The body first, as the edge's check came before the caller's role: a malformed body is the 422 whoever sends it.
        if (form) req.body = checkedBody(form, raw.body);
        return handler(req, opContext(await authorize(entry.auth, req.identity), emit, hctx, saved));
      },
      () => settings.announce(),
    ).catch((err: unknown) => {
      if (NUL_IN_TEXT.has((err as { code?: string }).code ?? '')) throw new BusError(400, 'Text may not contain NUL (\\u0000) characters.');
      throw err;
    });
    // The catalog's reply is a promise to clients; a body that breaks it is a bug, not an answer.
    const checked = entry.reply.safeParse(reply.body);
    if (!checked.success) {
      hctx.log.error({ op, issues: checked.error.issues.slice(0, 5) }, 'reply does not match the catalog');
      throw new BusError(500, OWUI_ERRORS.default);
    }
    // `{"body":…}` for a plain 200, so the edge can forward the body's bytes as they are.
    return chatReplyWire(reply);
  };
}
serveCatalog(worker, chatContracts, Object.fromEntries(CHAT_OP_NAMES.map((op) => [op, serveOp(op)])) as CatalogHandlers<typeof chatContracts>);
// API keys: the edge's cache misses, and the trusted-header sign-in (auth/api-keys.ops.ts); edges drop cached keys of changed users.
worker.handle(apiKeyResolveContract, (req) => resolveKey(sql, req));
const trustedEmit = emitFor(trustedSigninContract.subject, ['user.created', 'auth.signup', 'auth.login']);
worker.handle(trustedSigninContract, (req, hctx) => {
  const saved: Saved = { settings: false };
  return trackSettingsWrites(saved, () => trustedSignin(req, opContext(null, trustedEmit, hctx, saved)), () => settings.announce());
});
await invalidateOnUserChange(sql, `${env.CHAT_SCHEMA}_users`, bus);
// POST /api/chat/completions: a stream (status and content type, then SSE or JSON bytes).
const completionsEmit = emitFor(chatCompletionsContract.subject, CHAT_COMPLETION_EVENTS);
const completions = completionsHandler({
  ...llm,
  authorize: async (req, hctx) => opContext(await authorize('verified', req.identity), completionsEmit, hctx),
  memoryLimits: memoryLimits(process.env),
  ragSystemContext: env.RAG_SYSTEM_CONTEXT,
});
worker.stream(chatCompletionsContract, async (req, out, ctx) => {
  // Chunks that arrive together leave together (coalesce.ts).
  const batched = coalescing(out);
  try {
    await completions(req, batched, ctx);
  } finally {
    batched.flush();
  }
});
await serveUntilSignalled(bus, worker, 'chat worker', { schema: env.CHAT_SCHEMA }, async () => {
  await relay.stop();
  settings.stop();
  connectionsRevision.stop();
  webhooksReconciler.stop();
  await configReporter.stop();
  await Promise.all([sql.end({ timeout: 5 }), searchSql.end({ timeout: 5 })]);
});
