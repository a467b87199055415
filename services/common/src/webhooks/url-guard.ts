import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Server-side request forgery guard for webhook URLs (Open WebUI's validate_url): a receiver on a
 * private, loopback, link-local, shared, multicast or cloud-metadata address is refused unless the
 * operator allows local fetches (`ENABLE_LOCAL_WEB_FETCH`, formerly `ENABLE_RAG_LOCAL_WEB_FETCH`).
 * Checked when a webhook is saved (the URL and what its host resolves to) and again on every
 * connection the dispatcher opens (`guardedLookup`: the address actually dialled, so a DNS answer
 * that changes after the check, or a redirect to a private host, is refused too).
 */
const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['2001:db8::', 32]] as const) {
  blocked.addSubnet(net, bits, 'ipv6');
}
const BLOCKED_HOSTS = new Set(['localhost', 'metadata.google.internal', 'metadata', 'instance-data']);

/** Whether an IP address is one a webhook may not reach (IPv4-mapped IPv6 judged as its IPv4). */
export function isPrivateAddress(ip: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return isPrivateAddress(mapped[1]!);
  const family = isIP(ip);
  if (family === 4) return blocked.check(ip, 'ipv4');
  if (family === 6) return blocked.check(ip, 'ipv6');
  return true;
}

export class UrlRefused extends Error {}

function resolveAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (err, addrs) => (err ? reject(err) : resolve(addrs))));
}

/** Check a webhook URL: http(s), a host, and (unless local fetches are allowed) only public addresses. Throws UrlRefused with the reason. */
export async function checkWebhookUrl(raw: string, allowLocal: boolean): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlRefused('Invalid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UrlRefused('URL must use http or https');
  if (!url.hostname) throw new UrlRefused('Invalid URL');
  if (allowLocal) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (BLOCKED_HOSTS.has(host) || host.endsWith('.localhost') || host.endsWith('.internal')) throw new UrlRefused('URL points to a private or local address');
  const addrs = isIP(host) ? [{ address: host, family: isIP(host) }] : await resolveAll(host).catch(() => {
    throw new UrlRefused(`Cannot resolve host ${host}`);
  });
  if (addrs.some((a) => isPrivateAddress(a.address))) throw new UrlRefused('URL points to a private or local address');
  return url;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for http.request that refuses private addresses at connect time (after DNS). */
export function guardedLookup(allowLocal: boolean, isBlocked: (ip: string) => boolean = isPrivateAddress) {
  return (hostname: string, options: { all?: boolean } & Record<string, unknown>, cb: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true } as never, (err: NodeJS.ErrnoException | null, addrs: LookupAddress[]) => {
      if (err) return cb(err, '');
      const ok = allowLocal ? addrs : addrs.filter((a) => !isBlocked(a.address));
      if (!ok.length) {
        const e = new UrlRefused(`refused: ${hostname} resolves to a private or local address`) as NodeJS.ErrnoException;
        e.code = 'EPRIVATEADDR';
        return cb(e, '');
      }
      if (options.all) return cb(null, ok);
      return cb(null, ok[0]!.address, ok[0]!.family);
    });
  };
}

/** `ENABLE_LOCAL_WEB_FETCH` (Open WebUI 0.10's name), falling back to `ENABLE_RAG_LOCAL_WEB_FETCH`. */
export function localFetchAllowed(env: Record<string, string | undefined>): boolean {
  const v = env.ENABLE_LOCAL_WEB_FETCH ?? env.ENABLE_RAG_LOCAL_WEB_FETCH ?? 'false';
  return ['true', '1', 'yes'].includes(v.trim().toLowerCase());
}
