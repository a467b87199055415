import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { activeChildProcesses } from './child.ts';
import { Synthesizer } from './synthesize.ts';
import { collect, eventually, probe, processExists, SENTENCE_200 } from './test-helpers.ts';

const LIMITS = { maxConcurrency: 2, synthTimeoutMs: 60_000 };
let synth: Synthesizer | undefined;

afterEach(() => synth?.close());

/** Replacements start 20 ms after a request ends when no other is running (Synthesizer.refillWhenIdle). */
const nextTurn = () => new Promise((resolve) => setTimeout(resolve, 60));
const speak = async (s: Synthesizer, voice = 'en-us', speed = 1) => {
  const audio = await collect(s.synthesize({ text: SENTENCE_200, voice, format: 'mp3', speed }));
  await nextTurn();
  return audio;
};

describe('warm pool', () => {
  it('serves a command line from started processes after it has been asked for twice', { timeout: 60_000 }, async () => {
    synth = new Synthesizer({ ...LIMITS, warmProcesses: 4 });
    await speak(synth);
    expect(synth.warm().idle).toBe(0); // a one-off leaves nothing behind
    await speak(synth);
    const idle = synth.warm().idlePids;
    expect(idle).toHaveLength(4); // two espeak-ng, two ffmpeg
    expect(activeChildProcesses()).toHaveLength(0); // idle processes belong to no request

    let used: number[] = [];
    const audio = await collect(
      (async function* () {
        for await (const chunk of synth!.synthesize({ text: SENTENCE_200, voice: 'en-us', format: 'mp3', speed: 1 })) {
          if (used.length === 0) used = activeChildProcesses().map((p) => p.pid!);
          yield chunk;
        }
      })(),
    );
    await nextTurn();
    expect(used).toHaveLength(2);
    for (const pid of used) expect(idle).toContain(pid); // the request ran on warm processes
    expect((await probe(audio, 'mp3')).decodedSeconds).toBeGreaterThan(8);
    for (const pid of used) expect(await processExists(pid)).toBe(false); // and they are gone with it
    expect(synth.warm()).toMatchObject({ hits: 2, idle: 4 }); // replaced after the request
  });

  it('keeps at most `max` idle processes, evicting the oldest', { timeout: 60_000 }, async () => {
    synth = new Synthesizer({ ...LIMITS, warmProcesses: 3 });
    for (const voice of ['en-us', 'en-us', 'de', 'de']) await speak(synth, voice);
    expect(synth.warm().idle).toBe(2); // one espeak-ng → ffmpeg pipeline: a second would make 4
    const before = synth.warm().idlePids;
    expect(await eventually(async () => (await Promise.all(before.map(processExists))).every(Boolean))).toBe(true);
  });

  it('replaces an idle process that dies, and a request never gets a dead one', { timeout: 60_000 }, async () => {
    synth = new Synthesizer({ ...LIMITS, warmProcesses: 4 });
    await speak(synth);
    await speak(synth);
    expect(synth.warm().idle).toBe(4);
    const [first] = synth.warm().idlePids;
    // Lived past the crash-loop guard: replaced.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    process.kill(first!, 'SIGKILL');
    expect(await eventually(() => synth!.warm().idle === 4 && !synth!.warm().idlePids.includes(first!))).toBe(true);
    expect(synth.warm().replaced).toBe(1);
    // An ffmpeg killed just now: Node (and perhaps the kernel) has not caught up yet. The request is served
    // anyway, on the other warm one or, if it got the dead one, by running again on fresh processes.
    const comm = (pid: number) => readFileSync(`/proc/${pid}/comm`, 'latin1').trim();
    const ffmpegPid = synth.warm().idlePids.find((pid) => comm(pid) === 'ffmpeg')!;
    process.kill(ffmpegPid, 'SIGKILL');
    expect((await probe(await speak(synth), 'mp3')).decodedSeconds).toBeGreaterThan(8);
    expect(await eventually(() => synth!.warm().idle === 4)).toBe(true);

    // Stopped (alive but stuck): never handed out, killed instead.
    const [stopped] = synth.warm().idlePids;
    process.kill(stopped!, 'SIGSTOP');
    expect(await eventually(() => readFileSync(`/proc/${stopped}/stat`, 'latin1').includes(') T '))).toBe(true);
    const hitsBefore = synth.warm().hits;
    expect((await probe(await speak(synth), 'mp3')).decodedSeconds).toBeGreaterThan(8);
    expect(synth.warm().hits).toBe(hitsBefore + 2); // the healthy espeak-ng and ffmpeg beside it
    expect(await eventually(async () => !(await processExists(stopped!)))).toBe(true);
  });

  it('close() kills every idle process and starts no more', { timeout: 60_000 }, async () => {
    synth = new Synthesizer({ ...LIMITS, warmProcesses: 4 });
    await speak(synth);
    await speak(synth);
    const idle = synth.warm().idlePids;
    expect(idle.length).toBeGreaterThan(0);
    synth.close();
    expect(synth.warm().idle).toBe(0);
    expect(await eventually(async () => !(await Promise.all(idle.map(processExists))).some(Boolean))).toBe(true);
    await speak(synth);
    expect(synth.warm().idle).toBe(0);
  });

  it('a different environment is a different command line (no process started under the old one is used)', { timeout: 60_000 }, async () => {
    synth = new Synthesizer({ ...LIMITS, warmProcesses: 4 });
    await speak(synth);
    await speak(synth);
    const saved = process.env.PATH;
    process.env.PATH = '/nonexistent-bin';
    try {
      await expect(speak(synth)).rejects.toThrow(/could not be started.*ENOENT/);
    } finally {
      process.env.PATH = saved;
    }
  });
});
