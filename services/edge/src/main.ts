import closeWithGrace from 'close-with-grace';
import {
  connectBus,
  createLogger,
  openGateStore,
  parseEnv,
  reconcileEnvKey,
  type Bus,
} from '@gatehouse/common';
import { EdgeEnv } from './config.ts';
import { LiveGates } from './gates/live-gates.ts';
import { buildSpeechFace } from './faces/speech/speech-face.ts';

/**
 * Composition root of the edge. The listeners come up first with every gate `unknown` (503), so
 * an edge that cannot reach NATS is visibly degraded instead of silently open; the bus and the
 * gate store are attached when NATS answers.
 */
const env = parseEnv(EdgeEnv);
const log = createLogger('edge');
const gates = new LiveGates(['speech'], log);
let bus: Bus | undefined;
let stopping = false;

const speech = await buildSpeechFace({ gates, log, bus: () => bus, streamIdleMs: env.SPEECH_STREAM_IDLE_MS });
await speech.listen({ host: env.EDGE_HOST, port: env.SPEECH_PORT });
log.info({ face: 'speech', address: `http://${env.EDGE_HOST}:${env.SPEECH_PORT}`, instance: gates.instance }, 'speech face listening');

async function attachBus(): Promise<void> {
  for (let attempt = 1; !stopping; attempt++) {
    try {
      const b = await connectBus({ url: env.NATS_URL, name: `edge ${gates.instance}`, log });
      const store = await openGateStore(b);
      // Start-up is where the seed's variables speak: a changed one flips the gate, an
      // unchanged one leaves runtime flips alone.
      const outcome = await reconcileEnvKey(store, 'speech', env.API_KEY, `edge ${gates.instance} (API_KEY at start-up)`);
      log.info({ face: 'speech', outcome }, 'speech gate reconciled with API_KEY');
      await gates.follow(store);
      watchConnection(b);
      bus = b;
      return;
    } catch (err) {
      const delay = Math.min(5000, 250 * attempt);
      log.error({ err: (err as Error).message, retryInMs: delay }, 'cannot attach to NATS / the gate store; gated routes answer 503');
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

function watchConnection(b: Bus): void {
  void (async () => {
    for await (const s of b.nc.status()) {
      if (s.type === 'disconnect') gates.lost('lost connection to NATS');
      if (s.type === 'reconnect') await gates.reload().catch((err) => log.error({ err }, 'gate reload failed'));
    }
  })();
}

void attachBus();

closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
  stopping = true;
  if (err) log.error({ err }, 'edge stopping after an error');
  else log.info({ signal }, 'edge stopping');
  await speech.close();
  await gates.stop();
  await bus?.nc.drain();
});
