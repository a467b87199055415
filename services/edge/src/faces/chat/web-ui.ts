import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, posix } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifyStatic from '@fastify/static';

/**
 * The chat platform's web UI on the chat face: Vite's build of services/web-ui (`WEB_UI_DIR`) and
 * the Pyodide runtime its Python "Run" loads.
 *
 * - `/assets/*` — Vite's fingerprinted files: cached for a year, immutable; the `.br`/`.gz` the
 *   build wrote beside each file are sent to clients that accept them.
 * - `/pyodide/*` — the npm package `pyodide` as it is: any origin may load it (the sandboxed frame
 *   that runs Python has the opaque origin "null"), `.wasm` as `application/wasm`, `.mjs` as
 *   `text/javascript`, cached for a day.
 * - every other GET that accepts HTML and is not an API path — `/`, `/auth`, `/c/<id>`,
 *   `/admin/...`, a deep link on reload — answers `index.html` with `cache-control: no-cache`, and
 *   the client-side router takes it from there; a file at the top of the build (`/favicon.png`) is
 *   sent as it is. API paths (`/api/*`, `/health`, `/oauth/*`, `/ws/*`) keep their JSON 404s.
 * - without a build, those pages answer a 503 page saying how to build it (the API keeps working).
 *
 * The build is looked up per request, so a rebuild is served without restarting the edge.
 */
export interface WebUiOptions {
  /** The built app (index.html, assets/). */
  dir: string;
  /** The `pyodide` package folder; undefined → resolved from services/web-ui's dependencies. */
  pyodideDir?: string | null;
}

export interface WebUi {
  /** For the face's not-found handler: answers the request with the app when it is a page of it. */
  serve(req: FastifyRequest, reply: FastifyReply): FastifyReply | Promise<FastifyReply> | undefined;
}

export const IMMUTABLE = 'public, max-age=31536000, immutable';
const PYODIDE_CACHE = 'public, max-age=86400';

/** Paths that belong to the API: never the app, whatever the client accepts. */
const API_PATH = /^\/(api|oauth|ws|health)(\/|$)/;
/** One top-level file of the build (`/favicon.png`, `/manifest.json`): no directories, no dot files. */
const TOP_FILE = /^\/([A-Za-z0-9_-][A-Za-z0-9._-]*\.[A-Za-z0-9]+)$/;

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Gatehouse — web UI not built</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; line-height: 1.5">
<h1>web UI not built — run scripts/start</h1>
<p>The chat platform's API is up, but the web UI has not been built on this machine.
<code>scripts/start</code> (or <code>scripts/test</code>) builds it into <code>services/web-ui/dist</code>;
by hand: <code>cd services/web-ui &amp;&amp; node_modules/.bin/vite build</code>.</p>
</body></html>
`;

const webUiRoot = join(import.meta.dirname, '..', '..', '..', '..', 'web-ui');

/** The `pyodide` package's folder as services/web-ui resolves it; null when it is not installed. */
export function findPyodide(): string | null {
  for (const from of [join(webUiRoot, 'package.json'), import.meta.filename]) {
    try {
      return dirname(createRequire(from).resolve('pyodide/package.json'));
    } catch {
      // not installed there
    }
  }
  return null;
}

export async function registerWebUi(app: FastifyInstance, opts: WebUiOptions): Promise<WebUi> {
  const assets = join(opts.dir, 'assets');
  await app.register(fastifyStatic, {
    root: assets,
    prefix: '/assets/',
    // The build may appear after the edge started: no warning, looked up per request.
    serve: true,
    wildcard: true,
    index: false,
    redirect: false,
    dotfiles: 'deny',
    preCompressed: true,
    cacheControl: false,
    // sendFile (index.html, top-level files) goes through this too: those set no-cache first.
    setHeaders: (reply) => void (reply.hasHeader('cache-control') || reply.header('cache-control', IMMUTABLE)),
  });

  const pyodide = opts.pyodideDir === undefined ? findPyodide() : opts.pyodideDir;
  if (pyodide) {
    await app.register(fastifyStatic, {
      root: pyodide,
      prefix: '/pyodide/',
      decorateReply: false,
      wildcard: true,
      index: false,
      redirect: false,
      dotfiles: 'deny',
      cacheControl: false,
      setHeaders: (reply, path) => {
        reply.header('access-control-allow-origin', '*');
        reply.header('cross-origin-resource-policy', 'cross-origin');
        reply.header('cache-control', PYODIDE_CACHE);
        if (path.endsWith('.wasm')) reply.header('content-type', 'application/wasm');
        else if (path.endsWith('.mjs') || path.endsWith('.js')) reply.header('content-type', 'text/javascript; charset=utf-8');
      },
    });
  } else {
    app.log.warn('the npm package pyodide is not installed (services/web-ui): /pyodide/ answers 404 and Python cannot run in the web UI');
  }

  const wantsHtml = (req: FastifyRequest): boolean => {
    const accept = req.headers.accept;
    return accept === undefined || /text\/html|\*\/\*/.test(accept);
  };

  return {
    serve(req, reply) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return undefined;
      const path = (req.raw.url ?? '/').split('?')[0]!;
      if (isApiPath(path) || path.startsWith('/assets/') || path.startsWith('/pyodide/')) return undefined;
      const index = join(opts.dir, 'index.html');
      const top = TOP_FILE.exec(path)?.[1];
      if (top && top !== 'index.html' && isFile(join(opts.dir, top))) {
        return reply.header('cache-control', 'no-cache').sendFile(top, opts.dir);
      }
      if (!wantsHtml(req)) return undefined;
      if (!existsSync(index)) {
        return reply.code(503).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(NOT_BUILT);
      }
      return reply.header('cache-control', 'no-cache').type('text/html; charset=utf-8').sendFile('index.html', opts.dir);
    },
  };
}

/** An API path however it is spelt (`//api/…`, `/./api/…`, `/%61pi/…`, `/API/…`): it keeps its JSON answers. */
export function isApiPath(raw: string): boolean {
  let decoded = raw;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    // malformed escapes: judged as written
  }
  return [raw, decoded].some((p) => API_PATH.test(posix.normalize(p.replace(/\\/g, '/')).replace(/\/{2,}/g, '/').toLowerCase()));
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}
