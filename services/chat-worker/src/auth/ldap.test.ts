import { describe, expect, it } from 'vitest';
import { configProblem, groupNames, ldapUrl, userFilter, validAttribute } from './ldap.ts';

const base = { LDAP_ATTRIBUTE_FOR_USERNAME: 'uid', LDAP_ATTRIBUTE_FOR_MAIL: 'mail', LDAP_SEARCH_FILTERS: '' };

describe('userFilter (RFC 4515 escaping of the user name)', () => {
  it('lower-cases the name and escapes every filter metacharacter', () => {
    expect(userFilter(base, 'Alice')).toBe('(&(uid=alice))');
    expect(userFilter(base, '*')).toBe('(&(uid=\\2a))');
    expect(userFilter(base, 'a)(uid=*')).toBe('(&(uid=a\\29\\28uid=\\2a))');
    expect(userFilter(base, 'x\\y\u0000')).toBe('(&(uid=x\\5cy\\00))');
  });
  it('appends the admin filters, wrapping a bare one', () => {
    expect(userFilter({ ...base, LDAP_SEARCH_FILTERS: '(objectClass=person)' }, 'bob')).toBe('(&(uid=bob)(objectClass=person))');
    expect(userFilter({ ...base, LDAP_SEARCH_FILTERS: 'objectClass=person' }, 'bob')).toBe('(&(uid=bob)(objectClass=person))');
  });
});

describe('configProblem', () => {
  it('accepts complete filters and attribute names or OIDs', () => {
    expect(configProblem({ ...base, LDAP_SEARCH_FILTERS: '(|(memberOf=cn=a,dc=x)(memberOf=cn=b,dc=x))(objectClass=person)' })).toBeUndefined();
    expect(configProblem({ ...base, LDAP_ATTRIBUTE_FOR_USERNAME: 'sAMAccountName' }, '1.2.840.113556.1.4.1941')).toBeUndefined();
  });
  it('refuses unbalanced filters and attributes that carry filter syntax', () => {
    expect(configProblem({ ...base, LDAP_SEARCH_FILTERS: '(a=b))(|(c=*)' })).toMatch(/search_filters/);
    expect(configProblem({ ...base, LDAP_SEARCH_FILTERS: '(a=b' })).toMatch(/search_filters/);
    expect(configProblem({ ...base, LDAP_ATTRIBUTE_FOR_USERNAME: 'uid=*)(x' })).toMatch(/attribute_for_username/);
    expect(configProblem(base, 'memberOf)')).toMatch(/groups/);
    expect(validAttribute('')).toBe(false);
  });
});

describe('groupNames and ldapUrl', () => {
  it('takes the first CN of each group DN, as Open WebUI', () => {
    expect(groupNames(['cn=eng,ou=groups,dc=x', 'CN=Domain Users,CN=Users,DC=corp', 'ou=nocn,dc=x'])).toEqual(['eng', 'Domain Users']);
  });
  it('builds ldap:// or ldaps:// URLs, bracketing IPv6 hosts', () => {
    expect(ldapUrl({ LDAP_SERVER_HOST: 'dir.example', LDAP_SERVER_PORT: null, LDAP_USE_TLS: true })).toBe('ldaps://dir.example:636');
    expect(ldapUrl({ LDAP_SERVER_HOST: '::1', LDAP_SERVER_PORT: 389, LDAP_USE_TLS: false })).toBe('ldap://[::1]:389');
  });
});
