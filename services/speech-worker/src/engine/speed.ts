/** espeak-ng's default rate: OpenAI speed 1.0 maps onto it. */
export const BASE_WPM = 175;
/** espeak-ng ignores rates below 80 wpm (44 and 80 give the same length) and its output degrades fast above ~450. */
export const MIN_WPM = 80;
export const MAX_WPM = 450;
export const MIN_SPEED = 0.25;
export const MAX_SPEED = 4;

export interface SpeedPlan {
  /** Passed to `espeak-ng -s`. */
  wpm: number;
  /** ffmpeg `atempo` factors, each inside the filter's 0.5..2 range; empty when espeak alone reaches the speed. */
  atempo: number[];
}

/**
 * Splits an OpenAI speed into an espeak rate and the tempo change espeak cannot do itself. Letting espeak do
 * as much as possible keeps the speech natural (it shortens phonemes, not the waveform); atempo only covers
 * what lies outside espeak's working range, e.g. speed 0.25 = 80 wpm + atempo 0.547.
 */
export function planSpeed(speed: number): SpeedPlan {
  const wanted = BASE_WPM * speed;
  const wpm = Math.min(MAX_WPM, Math.max(MIN_WPM, Math.round(wanted)));
  let rest = wanted / wpm;
  const atempo: number[] = [];
  // Rounding wpm leaves a residue below 0.3 %; nobody hears that, and skipping it saves a filter.
  if (Math.abs(rest - 1) < 0.003) return { wpm, atempo };
  // Bounded: speed is validated to 0.25..4, but a loop on a float must still never spin.
  for (let i = 0; i < 8 && rest > 2; i++) {
    atempo.push(2);
    rest /= 2;
  }
  for (let i = 0; i < 8 && rest < 0.5; i++) {
    atempo.push(0.5);
    rest /= 0.5;
  }
  atempo.push(Number(rest.toFixed(6)));
  return { wpm, atempo };
}
