import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { blockedGroups, claimAt, claimList, domainAllowed, OAUTH_SETTINGS, roleFor } from './oauth-settings.ts';

const defaults = { ...z.object(OAUTH_SETTINGS).parse({}), DEFAULT_USER_ROLE: 'pending' as const };
const managed = { ...defaults, ENABLE_OAUTH_ROLE_MANAGEMENT: true };

describe('OAuth role from claims (Open WebUI get_user_role)', () => {
  it('makes the first and the only account admin whatever the claims say', () => {
    expect(roleFor(managed, null, 0, { roles: ['nobody'] })).toBe('admin');
    expect(roleFor(managed, { role: 'user' }, 1, {})).toBe('admin');
  });

  it('with role management: admin role > allowed role > the default role', () => {
    expect(roleFor(managed, null, 5, { roles: ['user', 'admin'] })).toBe('admin');
    expect(roleFor(managed, null, 5, { roles: ['user'] })).toBe('user');
    expect(roleFor(managed, { role: 'admin' }, 5, { roles: ['visitor'] })).toBe('pending');
    expect(roleFor(managed, null, 5, {})).toBe('pending');
    // Nested claims (Keycloak's realm_access.roles) and comma strings.
    expect(roleFor({ ...managed, OAUTH_ROLES_CLAIM: 'realm_access.roles' }, null, 5, { realm_access: { roles: ['admin'] } })).toBe('admin');
    expect(roleFor(managed, null, 5, { roles: 'staff,user' })).toBe('user');
    // No admin roles configured: the claim is not read at all.
    expect(roleFor({ ...managed, OAUTH_ADMIN_ROLES: '' }, null, 5, { roles: ['admin'] })).toBe('pending');
  });

  it('without it: new accounts get the default role, existing ones keep theirs', () => {
    expect(roleFor(defaults, null, 5, { roles: ['admin'] })).toBe('pending');
    expect(roleFor({ ...defaults, DEFAULT_USER_ROLE: 'user' }, null, 5, {})).toBe('user');
    expect(roleFor(defaults, { role: 'admin' }, 5, { roles: [] })).toBe('admin');
  });
});

describe('claims and lists', () => {
  it('reads dotted paths, falling back to a flat claim of that name', () => {
    expect(claimAt({ a: { b: ['x'] } }, 'a.b')).toEqual(['x']);
    expect(claimAt({ 'a.b': 'flat' }, 'a.b')).toBe('flat');
    expect(claimAt({}, 'groups')).toBeUndefined();
  });

  it('turns arrays, comma strings and single values into lists', () => {
    expect(claimList(['a', 2, null, 'b'])).toEqual(['a', '2', 'b']);
    expect(claimList('a, b,,c')).toEqual(['a', 'b', 'c']);
    expect(claimList('solo')).toEqual(['solo']);
    expect(claimList({})).toEqual([]);
  });

  it('checks the email domain against the allowed list (* admits any)', () => {
    expect(domainAllowed('*', 'a@x.test')).toBe(true);
    expect(domainAllowed('example.com, Example.org', 'a@EXAMPLE.org')).toBe(true);
    expect(domainAllowed('example.com', 'a@sub.example.com')).toBe(false);
    expect(domainAllowed('', 'a@example.com')).toBe(false);
  });

  it('reads blocked groups as a JSON list, anything else blocks nothing', () => {
    expect(blockedGroups('["contractors", 3]')).toEqual(['contractors']);
    expect(blockedGroups('contractors')).toEqual([]);
  });
});
