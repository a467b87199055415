/**
 * How deep a JSON text nests, counted without parsing it, stopping as soon as it passes `max`.
 * JSON.parse takes 10,000 levels happily, but what runs after it — schema checks, JSON.stringify
 * of an error echoing the input, the bus encoder — recurses and overflows the stack. Refusing such
 * a body at the door, in the face's own error format, is the one fix for the whole class (Qdrant's
 * serde_json stops at 128 levels, pydantic's parser at 200).
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  // Fewer brackets than the limit cannot nest past it: no scan for ordinary bodies.
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) return true;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return false;
}

/** The depth every face accepts (deeper is refused as the face refuses malformed JSON). */
export const MAX_JSON_DEPTH = 256;
