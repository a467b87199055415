import { describe, expect, it } from 'vitest';
import { feedbackForm, siblingModelIds } from './feedback.ts';
import type { History } from './types.ts';

// An arena question answered twice (regenerated under the arena model) and a plain follow-up.
const history: History = {
  currentId: 'a2',
  messages: {
    u1: { id: 'u1', parentId: null, childrenIds: ['a1', 'a2'], role: 'user', content: 'Which is better?' },
    a1: { id: 'a1', parentId: 'u1', childrenIds: [], role: 'assistant', content: 'One', model: 'arena-model', selectedModelId: 'qwen3:8b', arena: true },
    a2: { id: 'a2', parentId: 'u1', childrenIds: ['u2'], role: 'assistant', content: 'Two', model: 'arena-model', selectedModelId: 'llama3:8b', arena: true },
    u2: { id: 'u2', parentId: 'a2', childrenIds: ['a3'], role: 'user', content: 'Thanks' },
    a3: { id: 'a3', parentId: 'u2', childrenIds: [], role: 'assistant', content: 'Welcome', model: 'gpt-4o' },
  },
};

describe("a rating's feedback form (Open WebUI's ResponseMessage shapes)", () => {
  it('arena: the model is the one the arena picked, its opponents the other answers', () => {
    expect(siblingModelIds(history, history.messages.a2!)).toEqual(['qwen3:8b']);
    const form = feedbackForm('c1', history, history.messages.a2!, { rating: 1 }, { id: 'c1' });
    expect(form).toEqual({
      type: 'rating',
      data: { rating: 1, model_id: 'llama3:8b', sibling_model_ids: ['qwen3:8b'] },
      meta: { arena: true, chat_id: 'c1', message_id: 'a2', message_index: 2, model_id: 'arena-model', base_models: { 'arena-model': null } },
      snapshot: { chat: { id: 'c1' } },
    });
  });

  it('a single answer: no sibling_model_ids, the reason form merged into the annotation', () => {
    const form = feedbackForm('c1', history, history.messages.a3!, { rating: -1, reason: 'Too verbose', comment: 'shorter', tags: ['Too verbose'], details: { rating: 3 } }, null);
    expect(form.data).toEqual({ rating: -1, reason: 'Too verbose', comment: 'shorter', tags: ['Too verbose'], details: { rating: 3 }, model_id: 'gpt-4o' });
    expect(form.meta).toMatchObject({ arena: false, message_id: 'a3', message_index: 4 });
  });
});
