/**
 * A mistake in what the client sent (empty input, unknown voice, bad speed…). The caller maps it to an
 * OpenAI-shaped HTTP 400 with `param` set; every other error from the engine is a server-side failure.
 */
export class SpeechInputError extends Error {
  override name = 'SpeechInputError';
  constructor(
    message: string,
    public param: string,
  ) {
    super(message);
  }
}

/**
 * espeak-ng or ffmpeg failed (could not start, exited non-zero, or the synthesis ran past its time limit).
 * `detail` is a short stderr summary, already part of `message`; it is meant for logs, not for clients.
 */
export class SynthesisError extends Error {
  override name = 'SynthesisError';
  constructor(
    message: string,
    public readonly detail = '',
  ) {
    super(detail ? `${message}: ${detail}` : message);
  }
}

/** The synthesis ran past SPEECH_SYNTH_TIMEOUT_MS and was killed; a caller may answer 504 instead of 500. */
export class SynthesisTimeoutError extends SynthesisError {
  override name = 'SynthesisTimeoutError';
}
