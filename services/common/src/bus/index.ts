export * from './connect.ts';
export * from './errors.ts';
export * from './body.ts';
export * from './request.ts';
export * from './stream.ts';
export * from './worker.ts';
export * from './catalog-worker.ts';
export * from './request-bytes.ts';
