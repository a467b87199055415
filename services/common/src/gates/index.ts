export * from './gate-key.ts';
export * from './gate-store.ts';
export * from './reconcile.ts';
