export * from './bus/index.ts';
export * from './gates/index.ts';
export * from './config/index.ts';
export * from './logger.ts';
export * from './env.ts';
export * from './sightings.ts';
export * from './db/migrations.ts';
export * from './embedding/lexical-hash.ts';
