// A prompt's `{{variables}}` (Open WebUI's prompt variables): `{{name}}`, or `{{name | type:…}}`
// whose part after `|` says how Open WebUI's form asks for it (text, textarea, select…); here
// every one is asked for as text, the type's `placeholder="…"` shown as the field's hint. The
// system variables Open WebUI fills itself are filled here too where the browser knows them
// (user name, date, time, weekday); `{{CLIPBOARD}}`, `{{USER_LOCATION}}` and the rest are left
// as typed.

export interface PromptVariable {
  /** The name inside the braces (before any `|`). */
  name: string;
  placeholder: string;
}

const VAR = /\{\{\s*([^{}|]+?)\s*(?:\|([^{}]*))?\}\}/g;
const SYSTEM = new Set(['USER_NAME', 'CURRENT_DATE', 'CURRENT_TIME', 'CURRENT_DATETIME', 'CURRENT_WEEKDAY', 'CURRENT_TIMEZONE', 'USER_LANGUAGE', 'CLIPBOARD', 'USER_LOCATION']);

/** The variables a user fills in, each once, in order of appearance. */
export function promptVariables(content: string): PromptVariable[] {
  const out: PromptVariable[] = [];
  for (const m of content.matchAll(VAR)) {
    const name = (m[1] ?? '').trim();
    if (!name || SYSTEM.has(name) || out.some((v) => v.name === name)) continue;
    const hint = /placeholder\s*=\s*"([^"]*)"/.exec(m[2] ?? '');
    out.push({ name, placeholder: hint?.[1] ?? '' });
  }
  return out;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** The system variables this browser can fill. */
export function systemValues(userName: string, at = new Date()): Record<string, string> {
  const date = `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}`;
  const time = `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
  return {
    USER_NAME: userName,
    CURRENT_DATE: date,
    CURRENT_TIME: time,
    CURRENT_DATETIME: `${date} ${time}`,
    CURRENT_WEEKDAY: at.toLocaleDateString('en-US', { weekday: 'long' }),
    CURRENT_TIMEZONE: Intl.DateTimeFormat().resolvedOptions().timeZone,
    USER_LANGUAGE: typeof navigator === 'undefined' ? 'en-US' : navigator.language,
  };
}

/** The text with every known variable replaced (unknown ones stay as typed). */
export function fillPrompt(content: string, values: Record<string, string>): string {
  return content.replace(VAR, (whole, rawName: string) => {
    const name = rawName.trim();
    return Object.hasOwn(values, name) ? (values[name] ?? '') : whole;
  });
}
