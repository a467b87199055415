import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { headerValue } from '../../kit/index.ts';

/**
 * Open WebUI's trusted-header sign-in (WEBUI_AUTH_TRUSTED_EMAIL_HEADER / _NAME_HEADER /
 * _GROUPS_HEADER) for deployments behind an authenticating proxy — honoured here only when the
 * request's direct peer is a proxy EDGE_TRUST_PROXY names. Anyone else could simply send the
 * header; Open WebUI trusts it from every peer and relies on the network to keep others out.
 */
export interface TrustedHeaderConfig {
  email?: string;
  name?: string;
  groups?: string;
}

export interface TrustedIdentity {
  email: string;
  name: string;
  groups: string[] | null;
}

/**
 * Whether a direct peer is a trusted proxy under Fastify's trustProxy setting: `true` trusts every
 * peer, a hop count ≥ 1 trusts the nearest hop, a list trusts its addresses and CIDR ranges
 * (plus proxy-addr's names `loopback`, `linklocal`, `uniquelocal`).
 */
export function peerTrust(trustProxy: boolean | number | string[] | undefined): (peer: string) => boolean {
  if (trustProxy === true) return () => true;
  if (typeof trustProxy === 'number') return () => trustProxy >= 1;
  if (!Array.isArray(trustProxy) || trustProxy.length === 0) return () => false;
  const list = new BlockList();
  const NAMED: Record<string, string[]> = {
    loopback: ['127.0.0.1/8', '::1/128'],
    linklocal: ['169.254.0.0/16', 'fe80::/10'],
    uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
  };
  for (const entry of trustProxy.flatMap((e) => NAMED[e] ?? [e])) {
    const [addr, bits] = entry.split('/');
    const type = isIPv6(addr!) ? 'ipv6' : 'ipv4';
    if (!isIPv4(addr!) && !isIPv6(addr!)) continue;
    if (bits === undefined) list.addAddress(addr!, type);
    else list.addSubnet(addr!, Number(bits), type);
  }
  return (peer) => {
    // An IPv4 client on a dual-stack socket shows as ::ffff:a.b.c.d.
    const v4 = peer.startsWith('::ffff:') && isIPv4(peer.slice(7)) ? peer.slice(7) : peer;
    if (isIPv4(v4)) return list.check(v4, 'ipv4');
    return isIPv6(v4) && list.check(v4, 'ipv6');
  };
}

/** The identity the proxy vouches for, or null (header absent, or the peer is not a trusted proxy). */
export function trustedIdentity(req: FastifyRequest, cfg: TrustedHeaderConfig, trusted: (peer: string) => boolean): TrustedIdentity | null {
  if (!cfg.email || !trusted(req.socket.remoteAddress ?? '')) return null;
  const email = headerValue(req.headers, cfg.email.toLowerCase())?.trim().toLowerCase();
  if (!email) return null;
  let name = email;
  const rawName = cfg.name ? headerValue(req.headers, cfg.name.toLowerCase()) : undefined;
  if (rawName) {
    // Open WebUI url-decodes the name (proxies send UTF-8 names percent-encoded).
    try {
      name = decodeURIComponent(rawName);
    } catch {
      name = rawName;
    }
  }
  const rawGroups = cfg.groups ? headerValue(req.headers, cfg.groups.toLowerCase()) : undefined;
  const groups = rawGroups === undefined ? null : rawGroups.split(',').map((g) => g.trim()).filter(Boolean);
  return { email, name, groups: groups && groups.length ? groups : null };
}
