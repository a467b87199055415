import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Stack } from '../../tests/support/local-stack.ts';
import { changelogDialog, fillSignUp, launchBrowser, person, pickModel, WEB_UI_DIST } from '../../tests/browser/browser-fixture.ts';
import { machineTicks, pct, waitQuiet } from './measure.ts';
import { availableParallelism } from 'node:os';
import { startFakeProcess } from './fake-process.ts';

/**
 * Web UI benchmark, on the real stack the browser tests use (chat worker, proxy worker on the fake
 * OpenAI upstream in a process of its own, chat-only edge serving services/web-ui/dist) in Debian's
 * chromium (playwright-core, the fixture's flags):
 * 1. JavaScript the chat view `/c/{id}` loads (network responses of type script), gzip size of each
 *    (zlib level 9 on the bytes, as the build's .gz; the browser gets brotli), vs. 250 KB;
 *    the build's other chunks (loaded lazily: highlight.js, …) listed apart;
 * 2. cold time to interactive: new context (empty cache, signed-in storage) → navigation start to
 *    `#chat-input` editable and `#model-selector-0-button` present (a MutationObserver in an init
 *    script), median of RUNS_TTI; long tasks until then;
 * 3. Enter → first answer text in the assistant message (MutationObserver on #messages-container,
 *    performance.now() at a capture keydown listener) vs. the API's own time to first content byte
 *    (Node fetch to /api/chat/completions, same model `echo`, same prompt), paired, alternating;
 * 4. paint lag under a fixed-rate stream: model `paced` (5 ms between chunks, one per word, ~400
 *    chunks); an init script wraps fetch's body to timestamp each chunk read, a MutationObserver
 *    notes when the words reached the DOM; long tasks during the stream.
 * Loops are bounded by count and time; a watchdog ends the run.
 * Env: BENCH_WEB_TTI_RUNS (10), BENCH_WEB_TTFT_RUNS (30), BENCH_WEB_STREAM_RUNS (3), BENCH_WEB_WORDS (399);
 * BENCH_WEB_DIST: serve that web UI build instead of services/web-ui/dist (a before/after pair);
 * BENCH_WEB_PROFILE=1: a CPU profile (CDP Profiler) of the first cold load and of the first paced
 * stream, summed by script and by function (self time), printed after the table — where the time goes.
 */
const RUNS_TTI = Number(process.env.BENCH_WEB_TTI_RUNS ?? 10);
const RUNS_TTFT = Number(process.env.BENCH_WEB_TTFT_RUNS ?? 30);
const RUNS_STREAM = Number(process.env.BENCH_WEB_STREAM_RUNS ?? 3);
const WORDS = Number(process.env.BENCH_WEB_WORDS ?? 399);
const PHASE_MS = 120_000;
const STEP_MS = 30_000;
const watchdog = setTimeout(() => {
  console.error('[bench] watchdog: the run took longer than 10 minutes; stopping');
  process.exit(2);
}, 10 * 60_000);
watchdog.unref();
const say = (s: string) => console.error(`[bench] ${s}`);
const f1 = (x: number) => x.toFixed(1);
const kb = (b: number) => `${(b / 1024).toFixed(1)} KB`;
const MODELS = ['echo', 'paced'];

/** Installed in every page: long tasks, a TTI probe, and fetch wrapped to timestamp chunks of streamed completions. */
const INIT = () => {
  const w = window as unknown as Record<string, unknown>;
  const longTasks: { start: number; duration: number }[] = [];
  w.__longTasks = longTasks;
  try {
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) longTasks.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask', buffered: true });
  } catch {
    // no longtask support
  }
  // TTI: the first time the input is editable and the model selector is in the DOM.
  const check = () => {
    if (w.__tti) return true;
    const input = document.getElementById('chat-input') as HTMLElement | null;
    if (input && input.isContentEditable && input.getAttribute('aria-disabled') !== 'true' && document.getElementById('model-selector-0-button')) {
      w.__tti = performance.now();
      return true;
    }
    return false;
  };
  const mo = new MutationObserver(() => check() && mo.disconnect());
  mo.observe(document, { subtree: true, childList: true, attributes: true });
  // Streamed completions: each chunk read, with when and how many answer words had arrived by then.
  const chunks: { t: number; words: number }[] = [];
  w.__chunks = chunks;
  const orig = window.fetch.bind(window);
  const fetches: { path: string; method: string; t0: number; t1: number }[] = [];
  w.__fetches = fetches;
  window.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const rec = { path: new URL(url, location.href).pathname, method: init?.method ?? (input instanceof Request ? input.method : 'GET'), t0: performance.now(), t1: 0 };
    fetches.push(rec);
    const res = await orig(input, init);
    rec.t1 = performance.now();
    if (!url.includes('/api/chat/completions') || !res.body) return res;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    let text = '';
    chunks.length = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(ctl) {
        const { value, done } = await reader.read();
        if (done) return ctl.close();
        const t = performance.now();
        buf += dec.decode(value, { stream: true });
        let cut: number;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const ev = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const data = ev.startsWith('data: ') ? ev.slice(6) : '';
          if (!data || data === '[DONE]') continue;
          try {
            const c = JSON.parse(data) as { choices?: { delta?: { content?: string } }[] };
            text += c.choices?.[0]?.delta?.content ?? '';
          } catch {
            // not JSON
          }
        }
        chunks.push({ t, words: text.split(/\s+/).filter(Boolean).length });
        ctl.enqueue(value);
      },
      cancel(r) {
        return reader.cancel(r);
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
};

/** In the page: observe the messages, note Enter; resolves nothing (read back with collect()). */
const ARM = () => {
  const w = window as unknown as Record<string, unknown>;
  const marks: { t: number; words: number; raf?: number }[] = [];
  w.__marks = marks;
  w.__enter = 0;
  w.__ltFrom = w.__longTasks ? (w.__longTasks as unknown[]).length : 0;
  w.__fetchFrom = (w.__fetches as unknown[]).length;
  const answerWords = () => {
    const all = document.querySelectorAll('#messages-container .assistant-message');
    const last = all[all.length - 1];
    const el = last?.querySelector('#response-content-container');
    const text = el?.textContent ?? '';
    return text.includes('echo:') ? text.slice(text.indexOf('echo:')).split(/\s+/).filter(Boolean).length : 0;
  };
  document.addEventListener(
    'keydown',
    (e) => {
      if (e.key === 'Enter' && !w.__enter) w.__enter = performance.now();
    },
    { capture: true },
  );
  const container = document.getElementById('messages-container') ?? document.body;
  let last = 0;
  const mo = new MutationObserver(() => {
    const n = answerWords();
    if (n > last) {
      last = n;
      const m: { t: number; words: number; raf?: number } = { t: performance.now(), words: n };
      marks.push(m);
      requestAnimationFrame(() => (m.raf = performance.now()));
    }
  });
  // The container may be created by the send (a new chat): watch the whole document.
  mo.observe(container === document.body ? document.body : container, { subtree: true, childList: true, characterData: true });
  w.__disarm = () => mo.disconnect();
};

/** tsx (esbuild keepNames) wraps nested functions in `__name(…)`; functions sent to the page need it defined there. */
async function prep(page: Page): Promise<void> {
  await page.addInitScript('globalThis.__name = (f) => f;');
  await page.addInitScript(INIT);
}

interface Collected {
  enter: number;
  marks: { t: number; words: number; raf?: number }[];
  chunks: { t: number; words: number }[];
  longTasks: { start: number; duration: number }[];
  fetches: { path: string; method: string; t0: number; t1: number }[];
}
const collect = (page: Page) =>
  page.evaluate(() => {
    const w = window as unknown as Record<string, unknown>;
    (w.__disarm as () => void)();
    return {
      enter: w.__enter as number,
      marks: w.__marks,
      chunks: w.__chunks,
      longTasks: (w.__longTasks as unknown[]).slice(w.__ltFrom as number),
      fetches: (w.__fetches as unknown[]).slice(w.__fetchFrom as number),
    } as Collected;
  });

/** Time to the first content byte of a streamed completion straight to the API (Node). */
function apiTtft(url: string, token: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = 0;
    let buf = '';
    const u = new URL(`${url}/api/chat/completions`);
    const req = request(
      { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`completions answered ${res.statusCode}`));
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          buf += d;
          if (!first && /"content": ?"[^"]/.test(buf)) first = performance.now() - t0;
        });
        res.on('end', () => (first ? resolve(first) : reject(new Error('no content in the stream'))));
        res.on('error', reject);
      },
    );
    req.setTimeout(STEP_MS, () => req.destroy(new Error('no answer in time')));
    req.on('error', reject);
    req.end(body);
  });
}

async function newChat(page: Page): Promise<void> {
  await page.locator('#sidebar-new-chat-button').click();
  await page.waitForFunction(() => {
    const i = document.getElementById('chat-input');
    return !!i && i.isContentEditable && !document.querySelector('#messages-container .assistant-message');
  }, undefined, { timeout: STEP_MS });
}

/** Type `text` (set at once: typing is not measured), arm the observers, press Enter, wait for the answer to finish. */
async function send(page: Page, text: string, words: number): Promise<Collected> {
  const input = page.locator('#chat-input');
  await input.click();
  await input.fill(text);
  await page.evaluate(ARM);
  await page.keyboard.press('Enter');
  await page.waitForFunction(
    (n) => {
      const all = document.querySelectorAll('#messages-container .assistant-message');
      const last = all[all.length - 1] as HTMLElement | undefined;
      return last?.dataset.done === 'true' && ((window as unknown as { __marks: { words: number }[] }).__marks.at(-1)?.words ?? 0) >= n;
    },
    words,
    { timeout: STEP_MS },
  );
  // One more frame so the last rAF stamp lands.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 20))));
  return collect(page);
}

const PROFILE = process.env.BENCH_WEB_PROFILE === '1';
/** Another build to measure (e.g. an older commit's, for a before/after on the same machine). */
const DIST = process.env.BENCH_WEB_DIST || WEB_UI_DIST;
type CdpProfile = { nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]; samples: number[]; timeDeltas: number[] };
const profiles: string[] = [];

/** Start the page's CPU profiler (sampling every 200 µs); the returned stop() gives the profile. */
async function startProfile(page: Page): Promise<() => Promise<CdpProfile>> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  return async () => {
    const { profile } = (await cdp.send('Profiler.stop')) as unknown as { profile: CdpProfile };
    await cdp.detach().catch(() => undefined);
    return profile;
  };
}

/** Self time by script file and by function, the top entries of each, as text. */
function summarize(title: string, p: CdpProfile): string {
  const byId = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const files = new Map<string, number>();
  const fns = new Map<string, number>();
  let total = 0;
  p.samples.forEach((id, i) => {
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    const f = byId.get(id);
    if (!f) return;
    const file = f.url ? f.url.replace(/^.*\//, '') : f.functionName ? `(${f.functionName})` : '(native)';
    if (f.functionName === '(idle)') return;
    total += dt;
    files.set(file, (files.get(file) ?? 0) + dt);
    const fn = `${f.functionName || '(anonymous)'} ${file}${f.url ? `:${f.lineNumber + 1}` : ''}`;
    fns.set(fn, (fns.get(fn) ?? 0) + dt);
  });
  const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `    ${f1(v)} ms  ${k}`).join('\n');
  return `${title}: ${f1(total)} ms busy on the page's main thread\n  by script:\n${top(files, 8)}\n  by function (self):\n${top(fns, 12)}`;
}

const stack = new Stack();
const upstreamKey = randomBytes(24).toString('base64url');
const fake = await startFakeProcess('openai', upstreamKey);
let browser: Browser | undefined;
try {
  await stack.startProxyWorker({
    OPENAI_API_BASE_URLS: fake.url,
    OPENAI_API_KEYS: upstreamKey,
    OPENAI_API_CONFIGS: JSON.stringify({ '0': { model_ids: MODELS } }),
    ENABLE_OLLAMA_API: 'false',
  });
  await stack.startChatWorker({ ENABLE_EVALUATION_ARENA_MODELS: 'false', PASSWORD_SCRYPT_LOG2N: '10' });
  const edge = await stack.startEdge({ EDGE_FACES: 'chat', WEB_UI_DIR: DIST, LOG_LEVEL: 'warn' });
  const url = edge.chatUrl;
  browser = await launchBrowser();
  const ticks0 = machineTicks();
  say(`chromium ${browser.version()}, stack at ${url}, web UI from ${DIST}`);

  // Set-up: the first user signs up in the page, dismisses the change log, asks once (a chat to open).
  const setupCtx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await setupCtx.newPage();
  await prep(page);
  await page.goto(url + '/');
  await page.waitForURL(/\/auth/);
  await fillSignUp(page, person('Bench'));
  await page.waitForURL((u) => !u.pathname.startsWith('/auth'));
  const dialog = changelogDialog(page);
  await dialog.waitFor();
  await dialog.getByRole('button', { name: "Okay, Let's Go!" }).click();
  await dialog.waitFor({ state: 'detached' });
  await pickModel(page, 'echo');
  const token = await page.evaluate(() => localStorage.token as string);
  await send(page, 'A chat to open again later', 6);
  await page.waitForURL(/\/c\//);
  const chatPath = new URL(page.url()).pathname;
  const state = await setupCtx.storageState();

  // 1 + 2: cold loads of /c/{id}.
  type Load = { html: number; js: number; api: number; apiN: number; tti: number; scripts: { path: string; raw: number; gz: number; enc: string }[]; longTasks: { start: number; duration: number }[] };
  const loads: Load[] = [];
  await waitQuiet('cold loads', 10_000, say);
  const t1 = performance.now();
  let failedLoads = 0;
  const firstBodies: string[] = [];
  const lazy: { f: string; gz: number }[] = [];
  for (let i = 0; i < RUNS_TTI && performance.now() - t1 < PHASE_MS; i++) {
    const ctx: BrowserContext = await browser.newContext({ viewport: { width: 1280, height: 800 }, storageState: state });
    const p = await ctx.newPage();
    await prep(p);
    const scripts: Load['scripts'] = [];
    const bodies: Promise<void>[] = [];
    // For a load that never becomes interactive: what the edge refused (a rebuild of dist by
    // someone else's test between the HTML and its scripts shows up here as a 404).
    const refused: string[] = [];
    p.on('response', (r) => {
      if (r.status() >= 400) refused.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    p.on('requestfailed', (r) => refused.push(`failed ${new URL(r.url()).pathname} (${r.failure()?.errorText ?? '?'})`));
    p.on('response', (r) => {
      if (r.request().resourceType() !== 'script') return;
      bodies.push(
        r.body().then(
          (b) => void (i === 0 && firstBodies.push(b.toString('utf8')), scripts.push({ path: new URL(r.url()).pathname, raw: b.length, gz: gzipSync(b, { level: 9 }).length, enc: r.headers()['content-encoding'] ?? 'identity' })),
          () => undefined,
        ),
      );
    });
    const stopProfile = PROFILE && i === 0 ? await startProfile(p) : null;
    try {
      await p.goto(url + chatPath, { waitUntil: 'commit' });
      const tti = (await (
        await p.waitForFunction(() => (window as unknown as { __tti?: number }).__tti, undefined, { timeout: STEP_MS }).catch(async (err) => {
          const html = await p.evaluate(() => document.getElementById('chat-input')?.outerHTML.slice(0, 300) ?? `no #chat-input; body: ${document.body.textContent?.slice(0, 200)}`);
          throw new Error(`no time to interactive at ${p.url()}: ${html}; refused: ${refused.join(', ') || 'none'}; ${String(err)}`);
        })
      ).jsonValue()) as number;
      await p.waitForLoadState('networkidle', { timeout: STEP_MS }).catch(() => undefined);
      await Promise.all(bodies);
      const longTasks = (await p.evaluate(() => (window as unknown as { __longTasks: { start: number; duration: number }[] }).__longTasks)).filter((t) => t.start < tti);
      const split = await p.evaluate((tti) => {
        const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming | undefined;
        const js = (performance.getEntriesByType('resource') as PerformanceResourceTiming[]).filter((r) => r.initiatorType === 'script' || r.name.endsWith('.js'));
        const api = ((window as unknown as { __fetches: { t0: number; t1: number }[] }).__fetches ?? []).filter((f) => f.t1 && f.t1 <= tti);
        return { html: nav?.responseEnd ?? NaN, js: Math.max(0, ...js.map((r) => r.responseEnd)), api: Math.max(0, ...api.map((f) => f.t1)), apiN: api.length };
      }, tti);
      loads.push({ tti, scripts, longTasks, ...split });
      if (stopProfile) profiles.push(summarize(`Profile of cold load 1 (to network idle; interactive at ${f1(tti)} ms)`, await stopProfile()));
    } catch (err) {
      failedLoads++;
      say(`cold load ${i + 1} failed: ${String(err)}`);
    } finally {
      await ctx.close();
    }
  }
  if (!loads.length) throw new Error('every cold load failed');
  // Chunks the loaded code can import later (named in it), as the edge serves them now
  // (dist is rebuilt whenever the web UI's sources change, so read it back at once).
  {
    const loadedText = firstBodies.join('\n');
    const loadedNames = new Set(loads[0]!.scripts.map((s) => s.path.split('/').pop()));
    const names = [...new Set(loadedText.match(/[\w.-]+-[\w-]{8}\.js/g) ?? [])].filter((f) => !loadedNames.has(f));
    for (const f of names.slice(0, 100)) {
      const r = await fetch(`${url}/assets/${f}`, { signal: AbortSignal.timeout(STEP_MS) });
      if (r.ok) lazy.push({ f, gz: gzipSync(Buffer.from(await r.arrayBuffer()), { level: 9 }).length });
    }
  }

  // 3: Enter → first answer text vs. the API's TTFT, paired, alternating.
  const prompt = 'What does the lighthouse keeper write in the log tonight?';
  const apiBody = JSON.stringify({ model: 'echo', stream: true, messages: [{ role: 'user', content: prompt }], features: { memory: false } });
  for (let i = 0; i < 3; i++) await apiTtft(url, token, apiBody); // warm-up
  const api: number[] = [];
  const ui: number[] = [];
  const uiFrame: number[] = [];
  const toFetch: number[] = [];
  const fetchToChunk: number[] = [];
  const chunkToDom: number[] = [];
  let before: string[] = [];
  const promptWords = prompt.split(/\s+/).length + 1;
  await waitQuiet('first token', 10_000, say);
  const t3 = performance.now();
  for (let i = 0; i < RUNS_TTFT && performance.now() - t3 < PHASE_MS; i++) {
    const runUi = async () => {
      await newChat(page);
      const c = await send(page, prompt, promptWords);
      const first = c.marks[0]!;
      ui.push(first.t - c.enter);
      if (first.raf) uiFrame.push(first.raf - c.enter);
      const comp = c.fetches.find((f) => f.path === '/api/chat/completions');
      if (comp && c.chunks[0]) {
        toFetch.push(comp.t0 - c.enter);
        fetchToChunk.push(c.chunks[0].t - comp.t0);
        chunkToDom.push(first.t - c.chunks[0].t);
      }
      if (i === 0) before = c.fetches.filter((f) => comp && f.t0 < comp.t0).map((f) => `${f.method} ${f.path.replace(/[0-9a-f-]{36}/, '{id}')} ${f1(f.t1 - f.t0)} ms`);
    };
    if (i % 2) {
      api.push(await apiTtft(url, token, apiBody));
      await runUi();
    } else {
      await runUi();
      api.push(await apiTtft(url, token, apiBody));
    }
  }

  // 4: paint lag under the paced stream.
  await pickModel(page, 'paced');
  const VOCAB = 'lighthouse harbour tide compass lantern orchard meadow granite violin saffron glacier ember'.split(' ');
  const long = Array.from({ length: WORDS }, (_, i) => VOCAB[i % VOCAB.length]).join(' ');
  const lags: number[] = [];
  const streams: { words: number; chunks: number; secs: number; lt: number; ltMs: number; ltMax: number; maxLag: number; worstAt: string }[] = [];
  await waitQuiet('paced stream', 10_000, say);
  const t4 = performance.now();
  for (let i = 0; i < RUNS_STREAM && performance.now() - t4 < PHASE_MS; i++) {
    await newChat(page);
    const stopProfile = PROFILE && i === 0 ? await startProfile(page) : null;
    const c = await send(page, long, WORDS + 1);
    if (stopProfile) profiles.push(summarize('Profile of paced stream 1 (Enter to the end of the answer)', await stopProfile()));
    const own: number[] = [];
    let worstAt = '';
    for (const ch of c.chunks) {
      if (!ch.words) continue;
      const m = c.marks.find((x) => x.words >= ch.words);
      if (!m) continue;
      const lag = Math.max(0, m.t - ch.t);
      // Where in the stream the worst lag was: ms after Enter, and the chunk's word count.
      if (!own.length || lag > Math.max(...own)) worstAt = `${f1(ch.t - c.enter)} ms after Enter (word ${ch.words})`;
      own.push(lag);
    }
    lags.push(...own);
    const first = c.chunks[0]!.t;
    const lastT = c.chunks.at(-1)!.t;
    const lt = c.longTasks.filter((x) => x.start >= c.enter && x.start <= lastT + 100);
    streams.push({
      words: c.chunks.at(-1)!.words,
      chunks: c.chunks.length,
      secs: (lastT - first) / 1000,
      lt: lt.length,
      ltMs: lt.reduce((a, x) => a + x.duration, 0),
      ltMax: Math.max(0, ...lt.map((x) => x.duration)),
      maxLag: Math.max(...own),
      worstAt,
    });
  }

  // Report.
  const first = loads[0]!;
  const jsGz = first.scripts.reduce((a, s) => a + s.gz, 0);
  const jsRaw = first.scripts.reduce((a, s) => a + s.raw, 0);
  const ttis = loads.map((l) => l.tti);
  const ltBefore = loads.map((l) => l.longTasks.length);
  const ltBeforeMs = loads.map((l) => l.longTasks.reduce((a, x) => a + x.duration, 0));
  const diff = ui.map((u, i) => u - api[i]!);
  const maxLag = Math.max(...lags);
  const over50 = lags.filter((x) => x > 50).length;
  const ltCount = streams.reduce((a, s) => a + s.lt, 0);
  const ltMs = streams.reduce((a, s) => a + s.ltMs, 0);
  const met = (ok: boolean) => (ok ? 'met' : '**not met**');

  const ticks1 = machineTicks();
  const busyCores = ((ticks1.busy - ticks0.busy) / (ticks1.total - ticks0.total)) * availableParallelism();
  console.log(`\nWeb UI (chromium ${browser.version()}), chat view ${chatPath.replace(/[^/]+$/, '{id}')}; machine busy ${busyCores.toFixed(2)} of ${availableParallelism()} cores on average during the run (everything: ours and others')\n`);
  console.log('Scripts the chat view loaded (first cold load; gzip = zlib level 9 on the bytes; transfer encoding in brackets):');
  for (const s of [...first.scripts].sort((a, b) => b.gz - a.gz)) console.log(`  ${s.path}  ${kb(s.gz)} gz, ${kb(s.raw)} raw [${s.enc}]`);
  console.log('Build chunks not loaded (lazy):');
  for (const l of lazy.sort((a, b) => b.gz - a.gz)) console.log(`  ${l.f}  ${kb(l.gz)} gz`);
  console.log(`Pyodide (/pyodide/) requested: ${first.scripts.some((s) => s.path.startsWith('/pyodide/')) ? 'yes' : 'no'}`);
  console.log(`Cold load, split (medians, ms from navigation start): HTML ${f1(pct(loads.map((l) => l.html), 50))}, last script ${f1(pct(loads.map((l) => l.js), 50))}, last API answer before interactive ${f1(pct(loads.map((l) => l.api), 50))} (${pct(loads.map((l) => l.apiN), 50)} requests), interactive ${f1(pct(ttis, 50))}; long tasks before it ${f1(pct(ltBeforeMs, 50))} ms`);
  console.log(`  long tasks per load: ${loads.map((l) => l.longTasks.map((t) => f1(t.duration)).join('+')).join(', ')}`);
  console.log(`Enter → first answer text, split (p50 / p95): Enter → completions request ${f1(pct(toFetch, 50))} / ${f1(pct(toFetch, 95))} ms; request → first chunk read ${f1(pct(fetchToChunk, 50))} / ${f1(pct(fetchToChunk, 95))} ms; chunk read → DOM ${f1(pct(chunkToDom, 50))} / ${f1(pct(chunkToDom, 95))} ms`);
  console.log(`  requests before the completion (first run): ${before.join('; ') || 'none'}`);
  console.log('Paced streams:');
  for (const s of streams) console.log(`  ${s.words} answer words (upstream chunks) in ${s.chunks} chunk reads over ${s.secs.toFixed(2)} s (${f1(s.words / s.secs)} words/s), max lag ${f1(s.maxLag)} ms at ${s.worstAt}, long tasks ${s.lt} (${f1(s.ltMs)} ms, longest ${f1(s.ltMax)} ms)`);
  console.log('');
  console.log('| measurement | target | measured | baseline | result | notes |');
  console.log('|---|---|---|---|---|---|');
  console.log(`| JS for the chat view, gzip | ≤ 250 KB | ${kb(jsGz)} (${kb(jsRaw)} raw) | — | ${met(jsGz <= 250 * 1024)} | ${first.scripts.length} scripts; ${lazy.length} lazy chunks not loaded (${kb(lazy.reduce((a, l) => a + l.gz, 0))} gz); 1 KB = 1024 B |`);
  console.log(`| cold time to interactive (median / max) | < 1 s | ${f1(pct(ttis, 50))} ms / ${f1(Math.max(...ttis))} ms | — | ${met(pct(ttis, 50) < 1000)} | n=${ttis.length} new contexts, empty cache${failedLoads ? ` (${failedLoads} failed)` : ''}; long tasks before it: median ${pct(ltBefore, 50)} (${f1(pct(ltBeforeMs, 50))} ms) |`);
  console.log(`| Enter → first answer text in the DOM (p50 / p95) | API + ≤ 15 ms | ${f1(pct(ui, 50))} / ${f1(pct(ui, 95))} ms | API TTFT ${f1(pct(api, 50))} / ${f1(pct(api, 95))} ms | ${met(pct(diff, 50) <= 15)} | n=${ui.length} paired; added p50 ${f1(pct(diff, 50))} ms, p95 ${f1(pct(diff, 95))} ms; next frame after the mutation p50 ${f1(pct(uiFrame, 50))} ms |`);
  console.log(`| paint lag at ~200 chunks/s (max / p95) | none > 50 ms | ${f1(maxLag)} / ${f1(pct(lags, 95))} ms | — | ${met(maxLag <= 50)} | ${lags.length} chunk reads over ${streams.length} streams of ${streams[0]?.words} words at ${streams.map((x) => f1(x.words / x.secs)).join(', ')} words/s; ${over50} over 50 ms; p50 ${f1(pct(lags, 50))} ms |`);
  console.log(`| long tasks during those streams | — | ${ltCount} (${f1(ltMs)} ms) | — | — | ${streams.map((s) => `${s.lt} / ${f1(s.ltMs)} ms`).join(', ')} |`);
  if (profiles.length) console.log(`\n${profiles.join('\n')}`);
  await setupCtx.close();
} finally {
  await browser?.close();
  await stack.close();
  await fake.stop();
}
