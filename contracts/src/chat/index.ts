export * from './bus.ts';
export * from './forms.ts';
export * from './catalog.ts';
export type { ChatAuth, ChatCatalogEntry } from './catalog-kit.ts';
export * from './replies.ts';
export * from './events.ts';
export * from './errors.ts';
export * from './completions.ts';
export * from './changelog.ts';
