import { describe, expect, it } from 'vitest';
import { FolderForm, SigninForm, AddMemoryForm } from './forms.ts';
import { validationDetail } from './errors.ts';

const detail = (schema: { safeParse(v: unknown): { success: boolean; error?: unknown } }, input: unknown) => {
  const r = schema.safeParse(input);
  expect(r.success).toBe(false);
  return validationDetail(r.error as never, input);
};

describe('FastAPI-shaped validation errors', () => {
  it('reports a missing field with the enclosing object as input', () => {
    expect(detail(SigninForm, { email: 'a@b.c' })).toEqual([
      { type: 'missing', loc: ['body', 'password'], msg: 'Field required', input: { email: 'a@b.c' } },
    ]);
  });
  it('uses pydantic wording for a wrong type and a bad enum value', () => {
    expect(detail(SigninForm, { email: 5, password: 'x' })).toEqual([
      { type: 'string_type', loc: ['body', 'email'], msg: 'Input should be a valid string', input: 5 },
    ]);
    expect(detail(AddMemoryForm, { content: 'c', type: 'other' })).toEqual([
      { type: 'enum', loc: ['body', 'type'], msg: "Input should be 'user' or 'context'", input: 'other' },
    ]);
  });
  it('reports each extra key of a strict form at the key (extra="forbid")', () => {
    expect(detail(FolderForm, { name: 'n', colour: 'red', x: 1 })).toEqual([
      { type: 'extra_forbidden', loc: ['body', 'colour'], msg: 'Extra inputs are not permitted', input: 'red' },
      { type: 'extra_forbidden', loc: ['body', 'x'], msg: 'Extra inputs are not permitted', input: 1 },
    ]);
  });
});
