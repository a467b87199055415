import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { newKey, Stack, type Edge } from '../support/local-stack.ts';
import { startFakeOpenAI } from '../../scripts/src/fake-upstreams/openai.ts';
import type { FakeUpstream } from '../../scripts/src/fake-upstreams/common.ts';

/**
 * What the browser tests share: a real stack (chat worker, proxy worker, an edge serving only the
 * chat face with the built web UI) whose one OpenAI connection is the fake upstream, and a real
 * chromium (Debian's, driven by playwright-core) looking at it.
 *
 * The connection lists two models: `slow-reasoning` streams `reasoning_content` and then the echo
 * of the question, 300 ms between chunks, so the thinking phase is on screen long enough to be
 * seen; `error-500` always fails with the upstream's 500; `python` answers a fenced Python block.
 * No arena model.
 */

const root = join(import.meta.dirname, '..', '..');
export const WEB_UI_DIST = join(root, 'services', 'web-ui', 'dist');
export const MODEL = 'slow-reasoning';
export const FAILING_MODEL = 'error-500';
/** Answers a fenced Python block whose Run prints 315. */
export const PYTHON_MODEL = 'python';
/** The fake's reasoning text and answer (scripts/src/fake-upstreams/openai.ts). */
export const REASONING = 'Let me think about this step by step.';
export const answerTo = (question: string) => `echo: ${question}`;

/** Flags for a headless chromium in a container, as root, without calls home. */
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-dev-shm-usage'];

/** The chromium to drive: GATEHOUSE_CHROMIUM, else Debian's /usr/bin/chromium; fails with the fix. */
export function chromiumPath(): string {
  const bin = process.env.GATEHOUSE_CHROMIUM ?? '/usr/bin/chromium';
  try {
    accessSync(bin, constants.X_OK);
  } catch {
    throw new Error(
      `no chromium at ${bin}: the browser tests drive a real one. Fix: apt-get install -y chromium ` +
        '(scripts/test installs it through infra/bringup/ensure-infra.sh), or set GATEHOUSE_CHROMIUM to a chromium binary.',
    );
  }
  return bin;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
}

export interface WebStack {
  stack: Stack;
  edge: Edge;
  upstream: FakeUpstream;
  /** The chat face, e.g. http://127.0.0.1:41234 */
  url: string;
  close(): Promise<void>;
}

/** Chat worker + proxy worker on the fake upstream + a chat-only edge serving the built web UI. */
export async function startWebStack(edgeEnv: Record<string, string> = {}, chatEnv: Record<string, string> = {}): Promise<WebStack> {
  if (!existsSync(join(WEB_UI_DIST, 'index.html'))) {
    throw new Error(`${WEB_UI_DIST}/index.html is missing: build the web UI first (node --import tsx scripts/src/build-web-ui.ts, or scripts/test)`);
  }
  const stack = new Stack();
  const key = newKey();
  const upstream = await startFakeOpenAI({ apiKey: key });
  try {
    await stack.startProxyWorker({
      OPENAI_API_BASE_URLS: upstream.url,
      OPENAI_API_KEYS: key,
      OPENAI_API_CONFIGS: JSON.stringify({ '0': { model_ids: [MODEL, FAILING_MODEL, PYTHON_MODEL] } }),
      ENABLE_OLLAMA_API: 'false',
    });
    // Cheap password hashing: sign-ins in a browser test are many and the machine is small.
    await stack.startChatWorker({ ENABLE_EVALUATION_ARENA_MODELS: 'false', PASSWORD_SCRYPT_LOG2N: '10', ...chatEnv });
    const edge = await stack.startEdge({ EDGE_FACES: 'chat', WEB_UI_DIR: WEB_UI_DIST, ...edgeEnv });
    return {
      stack,
      edge,
      upstream,
      url: edge.chatUrl,
      close: async () => {
        await stack.close();
        await upstream.close();
      },
    };
  } catch (err) {
    await stack.close().catch(() => undefined);
    await upstream.close();
    throw err;
  }
}

export interface Person {
  name: string;
  email: string;
  password: string;
}
/** A new person with a password generated now (never logged). */
export const person = (name: string): Person => ({
  name,
  email: `${name.toLowerCase()}-${randomBytes(4).toString('hex')}@example.com`,
  password: randomBytes(12).toString('base64url'),
});

/** A fresh page that reports its uncaught errors into `errors` (a test may assert there are none). */
export async function newPage(browser: Browser, errors: string[] = []): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  return page;
}

export interface BrowserSession {
  web: WebStack;
  browser: Browser;
  page: Page;
  /** Uncaught errors of the page. */
  errors: string[];
  close(): Promise<void>;
}

/** A web stack (startWebStack) and one chromium page on it; close() ends both. */
export async function openSession(edgeEnv: Record<string, string> = {}, chatEnv: Record<string, string> = {}): Promise<BrowserSession> {
  const web = await startWebStack(edgeEnv, chatEnv);
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    const errors: string[] = [];
    const page = await newPage(browser, errors);
    const b = browser;
    return { web, browser, page, errors, close: async () => (await b.close(), await web.close()) };
  } catch (err) {
    await browser?.close();
    await web.close();
    throw err;
  }
}

/** Fill the /auth form's sign-up fields (name, email, password) and submit it. */
export async function fillSignUp(page: Page, who: Person): Promise<void> {
  const nameInput = page.locator('#name, input[autocomplete="name"], input[name="name"]').first();
  await nameInput.waitFor();
  await nameInput.fill(who.name);
  await page.locator('#email').fill(who.email);
  await page.locator('input[type="password"]').first().fill(who.password);
  await page.locator('form button[type="submit"]').first().click();
}

/** Fill the /auth form's sign-in fields and submit it. */
export async function fillSignIn(page: Page, email: string, password: string): Promise<void> {
  await page.locator('#email').fill(email);
  await page.locator('input[type="password"]').first().fill(password);
  await page.locator('form button[type="submit"]').first().click();
}

/** The change-log dialog (Open WebUI's ChangelogModal: role=dialog, button "Okay, Let's Go!"). */
export const changelogDialog = (page: Page) => page.getByRole('dialog').filter({ hasText: "Okay, Let's Go!" });

/** Open the model selector, search for `id` and pick it. */
export async function pickModel(page: Page, id: string): Promise<void> {
  const search = page.locator('#model-search-input');
  if (!(await search.isVisible())) await page.locator('#model-selector-0-button').click();
  await search.fill(id);
  const list = page.getByRole('listbox', { name: 'Available models' });
  await list.getByRole('option').filter({ hasText: id }).first().click();
  await page.locator('#model-selector-0-button').filter({ hasText: id }).waitFor();
}

/** Type the question key by key into the TipTap editor and press Enter. */
export async function ask(page: Page, question: string): Promise<void> {
  const input = page.locator('#chat-input');
  await input.click();
  await input.pressSequentially(question);
  await page.keyboard.press('Enter');
}

/** When SCREENSHOTS_DIR is set (scripts/screenshots.ts), a PNG of the page named `name`. */
export async function shot(page: Page, name: string): Promise<void> {
  const dir = process.env.SCREENSHOTS_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`) });
}

/**
 * When SCREENSHOTS_DIR is set: `name-`wide|narrow`-`light|dark`.png` (1280×800 and 390×844, each
 * colour scheme, animations finished first), then the page back to wide and light.
 */
export async function shotsEverySize(page: Page, name: string): Promise<void> {
  if (!process.env.SCREENSHOTS_DIR) return;
  for (const [size, viewport] of [['wide', { width: 1280, height: 800 }], ['narrow', { width: 390, height: 844 }]] as const) {
    await page.setViewportSize(viewport);
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.evaluate(() => document.getAnimations().forEach((a) => a.finish()));
      await shot(page, `${name}-${size}-${scheme}`);
    }
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.emulateMedia({ colorScheme: 'light' });
}

/** The first sign-up of a fresh stack, through the page, ending in the app with the change log dismissed. */
export async function signUpIntoApp(page: Page, baseUrl: string, who: Person): Promise<void> {
  await page.goto(baseUrl + '/auth');
  await fillSignUp(page, who);
  await page.waitForURL((u) => !u.pathname.startsWith('/auth'));
  const dialog = changelogDialog(page);
  await dialog.waitFor();
  await dialog.getByRole('button', { name: "Okay, Let's Go!" }).click();
  await dialog.waitFor({ state: 'detached' });
}

/** A JSON call to the API from the test process with a session token; a non-2xx answer throws with its body. */
export async function apiJson<T>(baseUrl: string, token: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
  return JSON.parse(text) as T;
}
