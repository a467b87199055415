import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { createJsonSchemaTransform } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { HttpRoute } from '@gatehouse/contracts';

/**
 * Route schemas on the edge are zod (fastify-type-provider-zod): they type the handlers and make
 * each face's OpenAPI document, and are never run by Fastify — a request is validated once, by
 * the face's handler or by the worker, where the face's own error envelope is made.
 */
export const NOT_VALIDATED = () => () => true;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the route answers, for its face's OpenAPI document only (responses are never serialised through it). */
    docs?: RouteDocs;
  }
}

export interface RouteDocs {
  /** The 200 body (zod), or an OpenAPI response object written out (audio, Server-Sent Events). */
  reply?: z.ZodType | OpenApiResponse;
  /** Answers besides 200 that this route gives (the face's error envelope is added to each). */
  status?: Record<number, string>;
  /** Outside the gate and any sign-in (health, the documents): no security, none of the face's common refusals. */
  public?: true;
}

interface OpenApiResponse {
  description: string;
  content?: Record<string, { schema: unknown }>;
}

export interface ApiDocsOptions {
  title: string;
  description: string;
  /** The face's error envelope (JSON schema), the body of every refusal. */
  errorEnvelope: Record<string, unknown>;
  /** Answers every route may give (401 of the gate, 503 while the bus is away…), by status. */
  errors: Record<number, string>;
  securitySchemes?: Record<string, unknown>;
  security?: Record<string, string[]>[];
  /** Routes of the face that are not API (the web UI's pages and assets): left out of the document. */
  skip?: string[];
}

export const DOCS_PATHS = { document: '/openapi.json', ui: '/docs' } as const;

/**
 * `GET /openapi.json` (OpenAPI 3.1, generated from the routes registered after this, i.e. from the
 * face's catalog) and `/docs` (Swagger UI, local assets) on a face. Registered before the face's
 * routes: @fastify/swagger collects each route as it is added.
 */
export async function registerApiDocs(app: FastifyInstance, opts: ApiDocsOptions): Promise<void> {
  const zodTransform = createJsonSchemaTransform({ skipList: [DOCS_PATHS.document, `${DOCS_PATHS.ui}/*`, DOCS_PATHS.ui, ...(opts.skip ?? [])] });
  const refusal = { description: '', content: { 'application/json': { schema: opts.errorEnvelope } } };
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: opts.title, version: '1.0.0', description: opts.description },
      components: { securitySchemes: (opts.securitySchemes ?? {}) as never },
      ...(opts.security ? { security: opts.security } : {}),
    },
    transform: (arg) => {
      const docs = (arg.route as RouteOptions & { config?: { docs?: RouteDocs } }).config?.docs;
      const { schema, url } = zodTransform({ ...arg, schema: { ...arg.schema, ...(isZod(docs?.reply) ? { response: { 200: docs.reply } } : {}) } });
      const response: Record<string, unknown> = { ...((schema as { response?: object }).response ?? {}) };
      if (docs?.reply && !isZod(docs.reply)) response['200'] = docs.reply;
      else if (!response['200']) response['200'] = { description: 'OK' };
      for (const [status, description] of Object.entries({ ...(docs?.public ? {} : opts.errors), ...docs?.status })) response[status] = { ...refusal, description };
      return { schema: { ...schema, response, ...(docs?.public ? { security: [] } : {}) } as FastifySchema, url };
    },
  });
  app.get(DOCS_PATHS.document, { schema: { hide: true } as FastifySchema }, async () => app.swagger());
  await app.register(swaggerUi, { routePrefix: DOCS_PATHS.ui, uiConfig: { url: DOCS_PATHS.document } as never });
}

const isZod = (s: unknown): s is z.ZodType => s instanceof z.ZodType;

/**
 * A catalog route's schema: its path parameters (from the URL) and JSON body, named for the
 * document by the operation (`operationId` is unique per method and path).
 */
export function catalogRouteSchema(route: HttpRoute, op: string, body: z.ZodType | undefined, tags?: string[]): FastifySchema {
  const names = [...route.url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
  return {
    operationId: operationId(route, op),
    summary: op,
    ...(tags ? { tags } : {}),
    ...(names.length ? { params: z.object(Object.fromEntries(names.map((n) => [n, z.string()]))) } : {}),
    ...(body && route.method !== 'GET' && route.method !== 'HEAD' ? { body } : {}),
  } as FastifySchema;
}

/** One id per method and path, also where an operation answers on several paths or methods. */
function operationId(route: HttpRoute, op: string): string {
  return `${op}:${route.method.toLowerCase()}:${route.url}`;
}
