// Public surface of the speech engine: the NATS glue (src/main.ts) and the HTTP edge import from here only.
export { AUDIO_FORMATS, contentTypeFor, isAudioFormat, OUTPUT_SAMPLE_RATE, type AudioFormat } from './formats.ts';
export { listVoices, resolveVoice, OPENAI_VOICES, type Voice } from './voices.ts';
export { SpeechInputError, SynthesisError, SynthesisTimeoutError } from './errors.ts';
export { Synthesizer, type SynthesisRequest } from './synthesize.ts';
export { activeChildProcesses } from './child.ts';
export { MAX_INPUT_CHARS } from './text.ts';
export { listModels, resolveModel, BUILTIN_MODEL_IDS, type SpeechModel, type ModelRoute } from './models.ts';
export { parseEngineConfig, type EngineConfig, type UpstreamModel } from './config.ts';
export { synthesizeUpstream, UpstreamError, type OpenAISpeechBody } from './upstream.ts';
