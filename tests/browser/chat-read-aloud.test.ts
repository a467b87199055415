import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { answerTo, ask, MODEL, openSession, person, pickModel, shotsEverySize, signUpIntoApp, type BrowserSession } from './browser-fixture.ts';
import { axeAudit } from './axe-audit.ts';

/**
 * Read-aloud and voice input in a real browser on a real stack (the speech worker included): the
 * voice chosen in Settings → Audio from the server's list, a reply auto-played when that setting
 * is on, the speaker button (Open WebUI's "Read Aloud") stopping and playing a reply — the page
 * fetched audio/mpeg whose bytes are MP3 and the <audio> element played it — and the microphone
 * saying plainly that no speech-to-text engine is configured. axe-core: no serious or critical
 * violation. With SCREENSHOTS_DIR: chat-read-aloud-*, settings-audio-voice-* (wide/narrow × light/dark).
 */
let session: BrowserSession;
let page: Page;
const who = person('Ada');
const question = 'Read this one to me';

const settingsDialog = () => page.getByRole('dialog').filter({ has: page.locator('#settings-title') });
const reply = () => page.locator('.assistant-message[data-done="true"]').filter({ hasText: answerTo(question) });
const speaker = () => reply().getByRole('button', { name: 'Read Aloud' });

/** The <audio> under the reply has a fetched blob and has started (or finished) playing it. */
const played = () =>
  page.waitForFunction(() => {
    const a = document.querySelector<HTMLAudioElement>('.assistant-message .read-aloud-audio');
    return !!a && a.src.startsWith('blob:') && (a.currentTime > 0 || a.ended);
  });

function isMp3(bytes: Buffer): boolean {
  return bytes.subarray(0, 3).toString('latin1') === 'ID3' || (bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0);
}

beforeAll(async () => {
  session = await openSession();
  await session.web.stack.startWorker();
  page = session.page;
  await signUpIntoApp(page, session.web.url, who);
});
afterAll(() => session?.close());

describe('web UI: read-aloud and voice input', () => {
  it('Settings → Audio lists the server voices; the chosen one and auto-playback are saved', async () => {
    await page.locator('#sidebar-user-menu-button').click();
    await page.locator('#sidebar-user-menu').getByRole('menuitem', { name: 'Settings' }).click();
    await settingsDialog().waitFor();
    await page.locator('#settings-tab-audio').click();
    const voice = page.getByLabel('Set Voice');
    await expect.poll(() => voice.locator('option[value="echo"]').count()).toBe(1);
    await voice.selectOption('echo');
    await page.getByLabel('Auto-playback response').check();
    await settingsDialog().getByRole('button', { name: 'Save' }).click();
    await settingsDialog().getByRole('status').filter({ hasText: 'Settings saved successfully!' }).waitFor();
    expect(await axeAudit(page, 'settings audio voices', ['#settings-modal'])).toEqual([]);
    await page.mouse.move(1, 1);
    await shotsEverySize(page, 'settings-audio-voice');
    await page.keyboard.press('Escape');
    await settingsDialog().waitFor({ state: 'detached' });
  });

  it('a finished reply plays by itself with the chosen voice; the speaker stops it and plays it again', async () => {
    await pickModel(page, MODEL);
    const auto = page.waitForRequest((r) => r.url().endsWith('/api/v1/audio/speech') && r.method() === 'POST');
    await ask(page, question);
    const req = await auto;
    expect(req.postDataJSON()).toMatchObject({ input: answerTo(question), voice: 'echo' });
    await reply().waitFor();
    await played();

    // Pressed while playing: stops.
    await expect.poll(() => speaker().getAttribute('aria-pressed')).toBe('true');
    await speaker().click();
    await expect.poll(() => speaker().getAttribute('aria-pressed')).toBe('false');

    // Pressed again: fetches the audio and plays it.
    const answered = page.waitForResponse((r) => r.url().endsWith('/api/v1/audio/speech'));
    await speaker().click();
    const res = await answered;
    expect(res.status()).toBe(200);
    expect(res.headers()['content-type']).toBe('audio/mpeg');
    await played();
    // The bytes the element plays (the blob it was given): MP3.
    const blob = await page.evaluate(async () => {
      const a = document.querySelector<HTMLAudioElement>('.assistant-message .read-aloud-audio')!;
      const b = await (await fetch(a.src)).blob();
      return { type: b.type, size: b.size, head: [...new Uint8Array(await b.slice(0, 4).arrayBuffer())] };
    });
    expect(blob.type).toBe('audio/mpeg');
    expect(blob.size).toBeGreaterThan(500);
    expect(isMp3(Buffer.from(blob.head))).toBe(true);
    // Once the audio has ended the button is no longer pressed.
    await page.waitForFunction(() => document.querySelector<HTMLAudioElement>('.assistant-message .read-aloud-audio')?.ended === true);
    await expect.poll(() => speaker().getAttribute('aria-pressed')).toBe('false');
    expect(await axeAudit(page, 'chat read aloud', ['#main'])).toEqual([]);
    await page.mouse.move(1, 1);
    await shotsEverySize(page, 'chat-read-aloud');
  });

  it('the microphone records, and says plainly that no speech-to-text engine is configured', async () => {
    // A microphone for the headless browser: a tone from an oscillator.
    await page.evaluate(async () => {
      const ctx = new AudioContext();
      const osc = ctx.createOscillator();
      const dest = ctx.createMediaStreamDestination();
      osc.connect(dest);
      osc.start();
      await ctx.resume();
      (window as unknown as { __mic: AudioContext }).__mic = ctx;
      navigator.mediaDevices.getUserMedia = async () => dest.stream;
    });
    const mic = page.getByRole('button', { name: 'Voice Input' });
    await mic.click();
    await expect.poll(() => mic.getAttribute('aria-pressed')).toBe('true');
    await page.waitForFunction(() => (window as unknown as { __mic: AudioContext }).__mic.currentTime > 0.5);
    const answered = page.waitForResponse((r) => r.url().endsWith('/api/v1/audio/transcriptions'));
    await mic.click();
    const res = await answered;
    expect(res.status()).toBe(400);
    expect(res.request().headers()['content-type']).toMatch(/^multipart\/form-data/);
    const alert = page.locator('.mic-message[role="alert"]');
    await expect.poll(() => alert.textContent()).toMatch(/^No speech-to-text engine is configured/);
    expect(await axeAudit(page, 'chat mic no engine', ['#main'])).toEqual([]);
    await page.mouse.move(1, 1);
    await shotsEverySize(page, 'chat-mic-no-engine');
    expect(session.errors).toEqual([]);
  });
});
