// Runs the fake upstreams in the foreground (benchmarks, manual tries):
//   tsx scripts/src/fake-upstreams/main.ts
// prints one JSON line {"openai":"http://127.0.0.1:P/v1","anthropic":"http://127.0.0.1:Q","ollama":"http://127.0.0.1:R"}
// and serves until SIGINT/SIGTERM. FAKE_OPENAI_KEY / FAKE_ANTHROPIC_KEY / FAKE_OLLAMA_KEY, when set, become the
// keys the fakes require.
import { startFakeAnthropic } from './anthropic.ts';
import { startFakeOllama } from './ollama.ts';
import { startFakeOpenAI } from './openai.ts';

const openai = await startFakeOpenAI({ ...(process.env.FAKE_OPENAI_KEY ? { apiKey: process.env.FAKE_OPENAI_KEY } : {}), maxRecorded: 0 });
const anthropic = await startFakeAnthropic({ ...(process.env.FAKE_ANTHROPIC_KEY ? { apiKey: process.env.FAKE_ANTHROPIC_KEY } : {}), maxRecorded: 0 });
const ollama = await startFakeOllama({ ...(process.env.FAKE_OLLAMA_KEY ? { apiKey: process.env.FAKE_OLLAMA_KEY } : {}), maxRecorded: 0 });
process.stdout.write(`${JSON.stringify({ openai: openai.url, anthropic: anthropic.url, ollama: ollama.url })}\n`);

const stop = () => {
  void Promise.all([openai.close(), anthropic.close(), ollama.close()]).then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
