export * from './config-store.ts';
export * from './live-config.ts';
export * from './announce.ts';
export * from './presence.ts';
