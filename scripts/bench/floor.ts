import { request, type Agent } from 'node:http';
import { connect, type NatsConnection } from 'nats';
import { startBenchChild } from './fake-process.ts';

/**
 * The machine's floor for a stack's overhead: what the two hops it adds to an in-process call cost
 * here, with nothing of this project in them. A child process of its own answers a plain node:http
 * request and a plain NATS request (core request/reply through the server, as the bus does) with
 * `replyBytes` bytes; the benchmark times both from its own process, interleaved with its other
 * arms. The stack's overhead less these two is what the edge and the worker themselves cost; the
 * rest is the machine (one session's VM took 0.2 ms for the HTTP hop and 0.6 ms for the NATS one,
 * another 0.12 and 0.21).
 *
 * With `waitMs`, the child answers only after waiting that long (a timer), as a worker answers
 * after its Postgres statement, and the time it actually waited (it reports it) is taken off: what
 * is left is the two hops when the processes on either side have been idle that long. On a VM
 * whose idle vCPUs halt, a wake-up after a few milliseconds of idleness costs more than one right
 * after the last; a stack whose operation waits on Postgres pays that on every hop back.
 */
export interface Floor {
  /** One HTTP round trip on the keep-alive `agent`, to the reply's last byte, less the child's wait (ms). */
  http(agent: Agent, waitMs?: number): Promise<number>;
  /** One NATS request/reply, less the child's wait (ms). */
  nats(waitMs?: number): Promise<number>;
  stop(): Promise<void>;
}

const CHILD = `
  import http from 'node:http';
  import { connect, headers } from 'nats';
  const reply = Buffer.alloc(Number(process.env.FLOOR_BYTES), 'x');
  const nc = await connect({ servers: process.env.NATS_URL, noAsyncTraces: true });
  // After the wait asked for (0: at once), with the time actually waited in a header.
  const later = (waitMs, answer) => {
    if (!waitMs) return answer('0');
    const t0 = performance.now();
    setTimeout(() => answer(String(performance.now() - t0)), waitMs);
  };
  nc.subscribe(process.env.FLOOR_SUBJECT, {
    callback: (_err, m) => later(Number(new TextDecoder().decode(m.data)), (waited) => {
      const h = headers();
      h.set('waited', waited);
      m.respond(reply, { headers: h });
    }),
  });
  await nc.flush();
  const server = http.createServer((req, res) => {
    req.resume();
    later(Number(new URL(req.url, 'http://floor').searchParams.get('wait')), (waited) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': reply.length, waited });
      res.end(reply);
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'));
  process.once('SIGTERM', () => { server.close(); nc.close().finally(() => process.exit(0)); });
`;

export async function startFloor(natsUrl: string, replyBytes: number): Promise<Floor> {
  const subject = `bench.floor.${process.pid}`;
  // cwd: scripts/, whose node_modules hold the nats client.
  const child = await startBenchChild<{ port: number }>('the floor process', CHILD, {
    cwd: import.meta.dirname,
    env: { NATS_URL: natsUrl, FLOOR_SUBJECT: subject, FLOOR_BYTES: String(replyBytes) },
  });
  const port = child.ready.port;
  const nc: NatsConnection = await connect({ servers: natsUrl, noAsyncTraces: true });
  return {
    http: (agent, waitMs = 0) =>
      new Promise((resolve, reject) => {
        const t0 = performance.now();
        const req = request({ host: '127.0.0.1', port, path: `/?wait=${waitMs}`, agent }, (res) => {
          let n = 0;
          res.on('data', (d: Buffer) => (n += d.length));
          res.on('end', () => {
            if (n !== replyBytes) return reject(new Error(`the floor's HTTP reply had ${n} bytes, not ${replyBytes}`));
            resolve(performance.now() - t0 - Number(res.headers.waited));
          });
          res.on('error', reject);
        });
        req.setTimeout(10_000, () => req.destroy(new Error('the floor did not answer within 10 s')));
        req.on('error', reject);
        req.end();
      }),
    nats: async (waitMs = 0) => {
      const t0 = performance.now();
      const m = await nc.request(subject, new TextEncoder().encode(String(waitMs)), { timeout: 10_000 });
      if (m.data.byteLength !== replyBytes) throw new Error(`the floor's NATS reply had ${m.data.byteLength} bytes, not ${replyBytes}`);
      return performance.now() - t0 - Number(m.headers?.get('waited'));
    },
    stop: async () => {
      await nc.close();
      await child.stop();
    },
  };
}
