import { SpeechInputError } from './errors.ts';

/** OpenAI's limit on `input`. The edge enforces it too; the engine re-checks so no caller can feed it a book. */
export const MAX_INPUT_CHARS = 4096;

// C0 and C1 control characters other than \n. \r is folded into \n first (CRLF text), and tab, vertical
// tab and form feed become spaces so that "a\tb" stays two words instead of being glued together.
const CONTROL_CHARS = /[\u0000-\u0009\u000B-\u001F\u007F-\u009F]/g;

/**
 * Returns the text espeak-ng will read, or throws SpeechInputError (param `input`) when nothing speakable
 * is left or the text is too long. Length counts code points, as OpenAI (Python `len`) does.
 */
export function prepareInput(input: unknown, maxChars = MAX_INPUT_CHARS): string {
  if (typeof input !== 'string') throw new SpeechInputError('input must be a string', 'input');
  const text = input
    .replace(/\r\n?/g, '\n')
    .replace(/[\t\v\f]/g, ' ')
    .replace(CONTROL_CHARS, '');
  if (text.trim() === '') throw new SpeechInputError('input must contain some text to speak', 'input');
  let length = 0;
  for (const _ of text) length++;
  if (length > maxChars) {
    throw new SpeechInputError(
      `Expected a string with maximum length ${maxChars}, but got a string with length ${length} instead.`,
      'input',
    );
  }
  return text;
}
