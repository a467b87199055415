export * from './face-app.ts';
export * from './relay.ts';
export * from './credentials.ts';
export * from './json-depth.ts';
export * from './stream-limits.ts';
export * from './api-docs.ts';
