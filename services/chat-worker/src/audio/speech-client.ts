import { Readable } from 'node:stream';
import { SPEECH_CATALOG, SpeechRequest } from '@gatehouse/contracts';
import { BusError, busRequest, openBusStream, type Bus, type TraceCarrier } from '@gatehouse/common';

/**
 * This platform's own speech gateway, reached over the bus: the same `speech.*` requests the edge's
 * speech face sends (services/edge/src/faces/speech/speech-routes.ts), minus the face. The speech
 * gate guards that network face (a bearer key per client); the chat worker is an internal caller
 * whose users the chat face has already signed in, so it carries no key (docs/chat.md, "Audio").
 */

/** Longest silence between two frames of a synthesis (the speech worker streams as it encodes). */
const STREAM_IDLE_MS = 30_000;

export interface SpeechAudio {
  contentType: string;
  audio: Readable;
}

/** A synthesis as OpenAI's speech body; a body the gateway's own contract refuses is the caller's 400. */
export async function synthesizeOverBus(bus: Bus, body: Record<string, unknown>, trace?: TraceCarrier): Promise<SpeechAudio> {
  const parsed = SpeechRequest.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.');
    throw new BusError(400, where ? `${where}: ${issue?.message}` : (issue?.message ?? 'Invalid speech request'));
  }
  // Bytes only: a client asking for SSE gets the audio itself, as Open WebUI's read-aloud expects.
  const stream = openBusStream(bus, SPEECH_CATALOG.synthesize, { ...parsed.data, stream_format: 'audio' }, { idleTimeoutMs: STREAM_IDLE_MS, trace });
  let first;
  try {
    // The worker's refusals (an unknown voice or model: 400) arrive before the meta frame.
    first = await stream.next();
  } catch (err) {
    stream.close();
    throw asChatError(err);
  }
  if (!first || first.kind !== 'meta') {
    stream.close();
    throw new BusError(502, 'the speech gateway answered without audio');
  }
  async function* chunks(): AsyncGenerator<Buffer> {
    try {
      for (let f = await stream.next(); f; f = stream.ended ? undefined : await stream.next()) {
        if (f.kind === 'chunk') yield Buffer.from(f.data);
      }
    } finally {
      stream.close();
    }
  }
  return { contentType: first.meta.contentType, audio: Readable.from(chunks()) };
}

/** The gateway's voices as Open WebUI lists them: `{id, name}`. */
export async function voicesOverBus(bus: Bus, trace?: TraceCarrier): Promise<{ id: string; name: string }[]> {
  const list = await busRequest(bus, SPEECH_CATALOG.listVoices, {}, { trace }).catch((err: unknown) => {
    throw asChatError(err);
  });
  return list.voices.map((v) => ({ id: v.id, name: v.name }));
}

/** The gateway's models as Open WebUI lists them: `{id}`. */
export async function modelsOverBus(bus: Bus, trace?: TraceCarrier): Promise<{ id: string }[]> {
  const list = await busRequest(bus, SPEECH_CATALOG.listModels, {}, { trace }).catch((err: unknown) => {
    throw asChatError(err);
  });
  return list.data.map((m) => ({ id: m.id }));
}

/** The gateway's refusal as the chat face words errors (`detail`); a gateway that is down is a 503, not a 500. */
function asChatError(err: unknown): BusError {
  if (err instanceof BusError) return err.status >= 500 && err.status !== 503 && err.status !== 504 ? new BusError(502, `Speech gateway: ${err.message}`) : new BusError(err.status, err.message);
  return new BusError(503, 'The speech gateway is not reachable; try again shortly.');
}
