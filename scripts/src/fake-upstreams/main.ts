// Runs both fake upstreams in the foreground (benchmarks, manual tries):
//   tsx scripts/src/fake-upstreams/main.ts
// prints one JSON line {"openai":"http://127.0.0.1:P/v1","anthropic":"http://127.0.0.1:Q"} and serves until
// SIGINT/SIGTERM. FAKE_OPENAI_KEY / FAKE_ANTHROPIC_KEY, when set, become the keys the fakes require.
import { startFakeAnthropic } from './anthropic.ts';
import { startFakeOpenAI } from './openai.ts';

const openai = await startFakeOpenAI({ ...(process.env.FAKE_OPENAI_KEY ? { apiKey: process.env.FAKE_OPENAI_KEY } : {}), maxRecorded: 0 });
const anthropic = await startFakeAnthropic({ ...(process.env.FAKE_ANTHROPIC_KEY ? { apiKey: process.env.FAKE_ANTHROPIC_KEY } : {}), maxRecorded: 0 });
process.stdout.write(`${JSON.stringify({ openai: openai.url, anthropic: anthropic.url })}\n`);

const stop = () => {
  void Promise.all([openai.close(), anthropic.close()]).then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
