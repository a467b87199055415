import { describe, expect, it } from 'vitest';
import { exemptMatcher, normalisePath } from './normalise-path.ts';

describe('normalisePath', () => {
  it.each([
    ['/v1/models', '/v1/models', false],
    ['/health?x=1', '/health', false],
    ['/health/../v1/models', '/v1/models', true],
    ['//v1/models', '/v1/models', true],
    ['/docs/%2e%2e/v1/models', '/v1/models', true],
    ['/docs/%252e%252e/v1/models', '/v1/models', true],
    ['/health/..%2fv1/models', '/v1/models', true],
    ['/docs\\..\\v1\\models', '/v1/models', true],
    ['/./health', '/health', true],
    ['/%68ealth', '/health', true],
    ['/admin/', '/admin/', false],
    ['/%zz', '/%zz', true],
  ])('%s → %s (tricky %s)', (raw, path, tricky) => {
    expect(normalisePath(raw)).toEqual({ path, tricky });
  });
});

describe('exemptMatcher', () => {
  const exempt = exemptMatcher(['/health', '/docs', '/docs/*', '/admin/*']);
  it('matches exact paths and prefixes only', () => {
    expect(exempt('/health')).toBe(true);
    expect(exempt('/health/x')).toBe(false);
    expect(exempt('/healthz')).toBe(false);
    expect(exempt('/docs/static/index.html')).toBe(true);
    expect(exempt('/admin/status')).toBe(true);
    expect(exempt('/admin')).toBe(false);
    expect(exempt('/v1/models')).toBe(false);
  });
});
