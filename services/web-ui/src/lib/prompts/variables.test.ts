import { describe, expect, it } from 'vitest';
import { fillPrompt, promptVariables, systemValues } from './variables.ts';

describe('prompt variables', () => {
  it('finds each typed variable once, in order, with its placeholder; system ones are not asked for', () => {
    const text = 'Hi {{name}}, {{ topic | text:placeholder="e.g. tides" }} for {{name}} on {{CURRENT_DATE}} from {{CLIPBOARD}}';
    expect(promptVariables(text)).toEqual([
      { name: 'name', placeholder: '' },
      { name: 'topic', placeholder: 'e.g. tides' },
    ]);
    expect(promptVariables('no variables, {single} braces, {{}} empty')).toEqual([]);
  });

  it('fills known names (with or without a type part) and leaves the rest as typed', () => {
    const text = 'To {{name}} about {{topic | textarea}} — {{unknown}} {{CLIPBOARD}}';
    expect(fillPrompt(text, { name: 'Marie', topic: 'tides' })).toBe('To Marie about tides — {{unknown}} {{CLIPBOARD}}');
    // A value that looks like a variable is not filled again, and `$&` is inserted literally.
    expect(fillPrompt('{{a}} {{b}}', { a: '{{b}}', b: '$&' })).toBe('{{b}} $&');
  });

  it('system values: the user name and the date and time as Open WebUI writes them', () => {
    const v = systemValues('Ada', new Date(2026, 0, 5, 9, 7, 3));
    expect(v).toMatchObject({ USER_NAME: 'Ada', CURRENT_DATE: '2026-01-05', CURRENT_TIME: '09:07:03', CURRENT_DATETIME: '2026-01-05 09:07:03', CURRENT_WEEKDAY: 'Monday' });
    expect(fillPrompt('{{USER_NAME}} on {{CURRENT_DATE}}', v)).toBe('Ada on 2026-01-05');
  });
});
