import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPrivateAddress, webhookBody, DISCORD_MAX } from '@gatehouse/common';
import type { ChatEvent } from '@gatehouse/contracts';
import { Sender } from './send.ts';

/** The sender's SSRF guard and redirects, against real loopback servers. */
const hits: string[] = [];
let a: Server, b: Server;
let portA = 0, portB = 0;

function listen(host: string, handler: Parameters<typeof createServer>[1]): Promise<[Server, number]> {
  const s = createServer(handler);
  return new Promise((resolve) => s.listen(0, host, () => resolve([s, (s.address() as AddressInfo).port])));
}

beforeAll(async () => {
  [b, portB] = await listen('127.0.0.2', (req, res) => {
    hits.push(`b ${req.method} ${req.url}`);
    res.end('ok');
  });
  [a, portA] = await listen('127.0.0.3', (req, res) => {
    hits.push(`a ${req.method} ${req.url}`);
    req.resume();
    if (req.url === '/to-b') res.writeHead(307, { location: `http://127.0.0.2:${portB}/hidden` }).end();
    else if (req.url === '/to-b-name') res.writeHead(302, { location: `http://localhost:${portB}/hidden` }).end();
    else if (req.url === '/loop') res.writeHead(307, { location: '/loop' }).end();
    else if (req.url === '/busy') res.writeHead(429, { 'retry-after': '7' }).end();
    else res.writeHead(200).end('ok');
  });
});
afterAll(() => {
  a.close();
  b.close();
});

// 127.0.0.3 stands for "a public receiver" here; everything else private stays refused.
const onlyFirstLoopbackAllowed = (ip: string) => ip !== '127.0.0.3' && isPrivateAddress(ip);

describe('webhook sender', () => {
  it('delivers to an allowed address and follows a 307 with the POST', async () => {
    const s = new Sender(true, 5000, 4);
    const out = await s.post(`http://127.0.0.3:${portA}/to-b`, { 'content-type': 'application/json' }, '{}');
    expect(out).toEqual({ status: 200, retryAfterMs: null, error: null, refused: false });
    expect(hits.slice(-2)).toEqual(['a POST /to-b', 'b POST /hidden']);
    s.close();
  });

  it('refuses a redirect to a private address, written as an address or as a name that resolves to one', async () => {
    const s = new Sender(false, 5000, 4, onlyFirstLoopbackAllowed);
    hits.length = 0;
    const literal = await s.post(`http://127.0.0.3:${portA}/to-b`, {}, '{}');
    expect(literal.refused).toBe(true);
    const named = await s.post(`http://127.0.0.3:${portA}/to-b-name`, {}, '{}');
    expect(named.refused).toBe(true);
    expect(named.error).toMatch(/private or local/);
    // The first hop was made each time, the private one never.
    expect(hits).toEqual(['a POST /to-b', 'a POST /to-b-name']);
    s.close();
  });

  it('refuses loopback outright unless local fetches are allowed', async () => {
    const s = new Sender(false, 5000, 4);
    hits.length = 0;
    expect((await s.post(`http://localhost:${portB}/`, {}, '{}')).refused).toBe(true);
    expect((await s.post(`http://127.0.0.3:${portA}/`, {}, '{}')).refused).toBe(true);
    expect(hits).toEqual([]);
    s.close();
  });

  it('reports 429 with its Retry-After and stops a redirect loop', async () => {
    const s = new Sender(true, 5000, 4);
    expect(await s.post(`http://127.0.0.3:${portA}/busy`, {}, '{}')).toEqual({ status: 429, retryAfterMs: 7000, error: 'HTTP 429', refused: false });
    expect((await s.post(`http://127.0.0.3:${portA}/loop`, {}, '{}')).error).toBe('too many redirects');
    s.close();
  });

  it('judges addresses: private, loopback, link-local, metadata and mapped ones refused, public ones not', () => {
    for (const ip of ['10.1.2.3', '127.0.0.1', '169.254.169.254', '172.20.0.1', '192.168.1.1', '100.64.0.1', '::1', 'fe80::1', 'fd00:ec2::254', '::ffff:10.0.0.1', '0.0.0.0']) expect(isPrivateAddress(ip), ip).toBe(true);
    for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700::1111']) expect(isPrivateAddress(ip), ip).toBe(false);
  });
});

describe('payload formats (Open WebUI post_webhook)', () => {
  const ev = {
    schema: '0.10.2', id: 'e1', event: 'chat.created', resource: 'chat', operation: 'created', created_at: 1, instance_id: 'i', version: '0.10.2', source: 'api',
    actor: null, subject: { type: 'chat', id: 'c1' }, data: { title: 'Hello' }, message: null,
  } satisfies ChatEvent;
  it('Slack and Google Chat get {text}, Discord {content} of at most 2000, Teams a MessageCard, anything else the envelope', () => {
    expect(webhookBody('https://hooks.slack.com/services/x', ev)).toEqual({ text: 'Event: chat.created (c1)' });
    expect(webhookBody('https://chat.googleapis.com/v1/spaces/x', ev)).toEqual({ text: 'Event: chat.created (c1)' });
    expect(webhookBody('https://discord.com/api/webhooks/1/x', ev)).toEqual({ content: 'Event: chat.created (c1)' });
    const long = webhookBody('https://discord.com/api/webhooks/1/x', { ...ev, message: 'x'.repeat(5000) }) as { content: string };
    expect(long.content.length).toBeLessThanOrEqual(DISCORD_MAX);
    expect(long.content.endsWith('... (truncated)')).toBe(true);
    expect(webhookBody('https://acme.webhook.office.com/webhookb2/x', ev)).toMatchObject({ '@type': 'MessageCard', summary: 'Event: chat.created (c1)', sections: [{ activityTitle: 'Event: chat.created (c1)' }] });
    expect(webhookBody('https://example.com/hook', ev)).toBe(ev);
  });
});

describe('local fetch switch', () => {
  it('reads ENABLE_LOCAL_WEB_FETCH, falling back to ENABLE_RAG_LOCAL_WEB_FETCH', async () => {
    const { localFetchAllowed } = await import('@gatehouse/common');
    expect(localFetchAllowed({})).toBe(false);
    expect(localFetchAllowed({ ENABLE_LOCAL_WEB_FETCH: 'true' })).toBe(true);
    expect(localFetchAllowed({ ENABLE_RAG_LOCAL_WEB_FETCH: 'True' })).toBe(true);
    expect(localFetchAllowed({ ENABLE_LOCAL_WEB_FETCH: 'false', ENABLE_RAG_LOCAL_WEB_FETCH: 'true' })).toBe(false);
  });
});
