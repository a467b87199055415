import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP webhook receiver on loopback for the webhook tests: records every request (headers,
 * raw body, parsed JSON) and answers as `behave` says — a status, after a delay, or never (hang).
 * Can go down and come back on the same port.
 */
export interface Received {
  headers: Record<string, string>;
  raw: string;
  body: any;
  /** Completed (answered) — false while a hung or delayed request is still open. */
  answered: boolean;
}
export type Behaviour = (n: number, r: Received) => { status?: number; delayMs?: number; hang?: boolean; headers?: Record<string, string> };

export class Receiver {
  readonly got: Received[] = [];
  private server: Server | undefined;
  private readonly open = new Set<ServerResponse>();
  port = 0;
  behave: Behaviour = () => ({ status: 200 });

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }
  get completed(): number {
    return this.got.filter((g) => g.answered).length;
  }

  async start(port = 0): Promise<this> {
    const s = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString();
        let body: unknown = null;
        try {
          body = JSON.parse(raw);
        } catch {
          body = raw;
        }
        const r: Received = { headers: req.headers as Record<string, string>, raw, body, answered: false };
        this.got.push(r);
        const b = this.behave(this.got.length, r);
        if (b.hang) {
          this.open.add(res);
          return;
        }
        const answer = () => {
          r.answered = true;
          res.writeHead(b.status ?? 200, { 'content-type': 'text/plain', ...b.headers }).end('ok');
        };
        if (b.delayMs) setTimeout(answer, b.delayMs);
        else answer();
      });
    });
    await new Promise<void>((resolve) => s.listen(port, '127.0.0.1', () => resolve()));
    this.server = s;
    this.port = (s.address() as AddressInfo).port;
    return this;
  }

  /** Stop listening and cut every open connection (the port stays this receiver's to come back on). */
  async stop(): Promise<void> {
    for (const r of this.open) r.destroy();
    this.open.clear();
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  events(name?: string): any[] {
    return this.got.map((g) => g.body).filter((b) => !name || b?.event === name);
  }

  /** Wait (bounded) until `cond` holds. */
  async until(cond: () => boolean, what: string, ms = 15_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      if (cond()) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`receiver :${this.port}: ${what} did not happen (got ${this.got.length} requests: ${this.got.map((g) => g.body?.event).join(', ')})`);
  }
}
