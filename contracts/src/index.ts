export * from './bus.ts';
export * from './catalog.ts';
export * from './gates.ts';
export * from './speech.ts';
export * from './llm.ts';
export * from './anthropic.ts';
export * from './vector.ts';
export * from './qdrant.ts';
