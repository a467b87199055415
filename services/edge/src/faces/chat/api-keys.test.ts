import { describe, expect, it } from 'vitest';
import { endpointAllowed } from './api-keys.ts';
import { peerTrust } from './api-keys-trusted-header.ts';

describe('API key endpoint restrictions (Open WebUI APIKeyRestrictionMiddleware)', () => {
  it('allows a listed path and what lies below it, whole segments only', () => {
    const list = ' /api/models , /api/v1/chats,,';
    expect(endpointAllowed(list, '/api/models')).toBe(true);
    expect(endpointAllowed(list, '/api/v1/chats/abc/pin')).toBe(true);
    expect(endpointAllowed(list, '/api/modelsx')).toBe(false);
    expect(endpointAllowed(list, '/api/v1/users/')).toBe(false);
    expect(endpointAllowed('', '/api/models')).toBe(false);
  });
});

describe('trusted proxy peers (EDGE_TRUST_PROXY)', () => {
  it('reads true, hop counts, addresses, CIDR ranges and named ranges', () => {
    expect(peerTrust(false)('127.0.0.1')).toBe(false);
    expect(peerTrust(undefined)('127.0.0.1')).toBe(false);
    expect(peerTrust(true)('203.0.113.1')).toBe(true);
    expect(peerTrust(1)('203.0.113.1')).toBe(true);
    expect(peerTrust(0)('203.0.113.1')).toBe(false);
    const list = peerTrust(['10.1.0.0/16', '192.0.2.7', 'loopback']);
    expect(list('10.1.200.3')).toBe(true);
    expect(list('10.2.0.1')).toBe(false);
    expect(list('192.0.2.7')).toBe(true);
    expect(list('192.0.2.8')).toBe(false);
    expect(list('::ffff:127.0.0.1')).toBe(true);
    expect(list('::1')).toBe(true);
    expect(list('')).toBe(false);
  });
});
