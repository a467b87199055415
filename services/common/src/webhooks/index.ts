export * from './url-guard.ts';
export * from './match.ts';
export * from './sign.ts';
export * from './payload.ts';
export * from './store.ts';
export * from './platform-event.ts';
