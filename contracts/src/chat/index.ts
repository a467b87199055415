export * from './bus.ts';
export * from './forms.ts';
export * from './routes.ts';
export * from './events.ts';
export * from './errors.ts';
export * from './completions.ts';
