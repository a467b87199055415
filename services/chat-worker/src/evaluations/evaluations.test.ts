import { describe, expect, it } from 'vitest';
import { effectiveArena } from './evaluations.ops.ts';

describe('effectiveArena', () => {
  const env = { enabled: true, models: [{ id: 'arena-env', name: 'From env', meta: { model_ids: null } }] };

  it('is the environment’s while the admin has set nothing', () => {
    expect(effectiveArena(env, { ENABLE_EVALUATION_ARENA_MODELS: null, EVALUATION_ARENA_MODELS: null })).toEqual(env);
  });

  it('takes each setting the admin stored, the other from the environment', () => {
    expect(effectiveArena(env, { ENABLE_EVALUATION_ARENA_MODELS: false, EVALUATION_ARENA_MODELS: null })).toEqual({ ...env, enabled: false });
    const models = [{ id: 'duel', name: 'Duel', meta: { model_ids: ['a', 'b'] } }];
    expect(effectiveArena(env, { ENABLE_EVALUATION_ARENA_MODELS: null, EVALUATION_ARENA_MODELS: models })).toEqual({ enabled: true, models });
    // An empty list is a list: the default arena model (config/models.ops.ts) then applies, as in Open WebUI.
    expect(effectiveArena(env, { ENABLE_EVALUATION_ARENA_MODELS: true, EVALUATION_ARENA_MODELS: [] })).toEqual({ enabled: true, models: [] });
  });

  it('leaves out stored entries without a string id, names the others by id when unnamed, and keeps meta an object', () => {
    const stored = [{ name: 'no id' }, { id: '' }, { id: 7 }, { id: 'x' }, { id: 'y', name: 'Y', meta: ['bad'] }, { id: 'z', name: 5, meta: { a: 1 } }];
    expect(effectiveArena(env, { ENABLE_EVALUATION_ARENA_MODELS: null, EVALUATION_ARENA_MODELS: stored }).models).toEqual([
      { id: 'x', name: 'x', meta: {} },
      { id: 'y', name: 'Y', meta: {} },
      { id: 'z', name: 'z', meta: { a: 1 } },
    ]);
  });
});
