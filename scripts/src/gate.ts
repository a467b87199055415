import { readFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { FACES, type Face } from '@gatehouse/contracts';
import {
  connectBus,
  createLogger,
  DEFAULT_NATS_URL,
  DEFAULT_REDIS_URL,
  generateKey,
  keyDigest,
  keyFingerprint,
  listSightings,
  openGateStore,
  type GateStore,
  type Sighting,
} from '@gatehouse/common';
import { Redis } from 'ioredis';
import { acceptedDigests } from '@gatehouse/contracts';
import { enforcedState, flipGate, isFace, openState, type FlipResult } from './gate-ops.ts';
import { verifyLlm, verifySpeech, verifyVector } from './verify.ts';

const USAGE = `Usage: scripts/gate <command>

  status                              every face: state, key fingerprint, revision, edges that applied it
  enforce <face> --key-file FILE      enforce with the key in FILE ("-" reads standard input)
  enforce <face> --generate           enforce with a new random key, printed once on standard output
                                      vector: refused while a client seen recently lacks the key
                                      (see preflight); --force overrides, and says so
  open <face>                         open the face (no key needed)
  preflight vector --key-file FILE    clients seen recently and whether each already sends that key
  rotate <face> --key-file FILE       accept the new key and the current ones together for a grace
        [--grace 1h]                  period (--grace, default 1h), then only the new one
  verify [--key-file [FACE=]FILE]...  probe every served face with the gate status matrix
                                      (with a face's key, also check that it is accepted)

Faces: ${Object.keys(FACES).join(', ')}
Options: --timeout-ms N   how long enforce/open/rotate wait for every live edge (default 5000)
         --since 24h      what "seen recently" means for preflight and enforce vector (default 24h)
Env: NATS_URL (default ${DEFAULT_NATS_URL}), GATEHOUSE_NS, SPEECH_URL (default http://127.0.0.1:\${TTS_GATEWAY_PORT:-8196}),
     PROXY_URL (default http://127.0.0.1:3000), VECTOR_URL (default http://127.0.0.1:6333), REDIS_URL
Keys are never taken from the command line and never printed, except a --generate key, once.`;

/** Keys shorter than this are refused: a gate key is at least 32 random characters (docs/gates.md). */
const MIN_KEY_CHARS = 32;

const err = (s: string) => process.stderr.write(`${s}\n`);

function readKeyFile(path: string): string {
  const raw = path === '-' ? readFileSync(0, 'utf8') : readFileSync(path, 'utf8');
  const key = raw.replace(/\r?\n$/, '');
  if (!key || /\s/.test(key)) throw new Error(`the key in ${path === '-' ? 'standard input' : path} is empty or contains white space`);
  if (key.length < MIN_KEY_CHARS) throw new Error(`the key is ${key.length} characters; at least ${MIN_KEY_CHARS} are required`);
  return key;
}

function actor(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (containers): keep "unknown"
  }
  return `scripts/gate (${user}@${hostname()})`;
}

function reportFlip(face: Face, state: string, r: FlipResult): number {
  if (r.lagging.length) {
    err(`${face}: ${state} at revision ${r.revision}, but these edge instances did not apply it in time: ${r.lagging.join(', ')}`);
    return 1;
  }
  err(`${face}: ${state} at revision ${r.revision}; applied by ${r.applied.length} edge instance(s)${r.applied.length ? `: ${r.applied.join(', ')}` : ''}`);
  return 0;
}

async function status(store: GateStore): Promise<number> {
  const edges = await store.listPresence();
  for (const face of Object.keys(FACES) as Face[]) {
    const rec = await store.get(face);
    const serving = edges.filter((e) => face in e.applied);
    if (!rec) {
      console.log(`${face}: no gate record${serving.length ? '' : ' (face not served by any live edge)'}`);
      continue;
    }
    const s = rec.state;
    let key = '-';
    if (s?.state === 'enforced') {
      key = s.keyDigests.map(keyFingerprint).join(' + ') || '(none)';
      if (s.readOnlyKeyDigests?.length) key += `  read-only ${s.readOnlyKeyDigests.map(keyFingerprint).join(' + ')}`;
      if (s.graceKeyDigests?.length && s.graceUntil) {
        const live = Date.parse(s.graceUntil) > Date.now();
        key += `  ${live ? 'also accepting' : 'stopped accepting'} ${s.graceKeyDigests.map(keyFingerprint).join(' + ')} ${live ? 'until' : 'at'} ${s.graceUntil}`;
      }
    }
    console.log(
      `${face}: ${s?.state ?? `UNUSABLE (${rec.error})`}  key ${key}  revision ${rec.revision}` +
        (s ? `  changed ${s.changedAt} by ${s.changedBy}` : ''),
    );
    for (const e of serving) {
      const a = e.applied[face];
      const ok = a && a.revision === rec.revision && a.state !== 'unknown';
      console.log(`  edge ${e.instance}: ${ok ? 'applied' : 'NOT applied'} revision ${a?.revision} (${a?.state})${e.degraded.length ? `  degraded: ${e.degraded.join('; ')}` : ''}`);
    }
    if (!serving.length) console.log('  no live edge serves this face');
  }
  return 0;
}

async function verify(store: GateStore, keyFile: Partial<Record<Face, string>> | undefined): Promise<number> {
  let failures = 0;
  const edges = await store.listPresence();
  for (const face of Object.keys(FACES) as Face[]) {
    const rec = await store.get(face);
    const serving = edges.filter((e) => face in e.applied);
    if (!serving.length) continue;
    if (!rec?.state) {
      console.log(`${face}: MISMATCH no usable desired state (${rec?.error ?? 'no record'}); edges answer 503 (fail closed)`);
      failures++;
      continue;
    }
    for (const e of serving) {
      if (e.applied[face]?.revision !== rec.revision) {
        console.log(`${face}: MISMATCH edge ${e.instance} applied revision ${e.applied[face]?.revision}, desired ${rec.revision}`);
        failures++;
      }
    }
    const key = keyFile?.[face] ? readKeyFile(keyFile[face]) : undefined;
    let base: string;
    let results;
    if (face === 'speech') {
      base = process.env.SPEECH_URL ?? `http://127.0.0.1:${process.env.TTS_GATEWAY_PORT || 8196}`;
      results = await verifySpeech(base, rec.state.state, key);
    } else if (face === 'llm') {
      base = process.env.PROXY_URL ?? 'http://127.0.0.1:3000';
      results = await verifyLlm(base, rec.state.state, key);
    } else {
      base = process.env.VECTOR_URL ?? 'http://127.0.0.1:6333';
      results = await verifyVector(base, rec.state.state, key);
    }
    const bad = results.filter((r) => !r.ok);
    failures += bad.length;
    console.log(`${face} (${base}): desired ${rec.state.state}; ${results.length - bad.length}/${results.length} probes as expected`);
    for (const r of bad) console.log(`  MISMATCH ${r.what}: expected ${r.expected}, got ${r.got}`);
  }
  console.log(failures ? `verify: ${failures} mismatch(es)` : 'verify: every face behaves as its desired state');
  return failures ? 1 : 0;
}

/** `--key-file FACE=FILE` for one face, or a plain `--key-file FILE` for every face. */
function verifyKeyFiles(specs: string[]): Partial<Record<Face, string>> {
  const out: Partial<Record<Face, string>> = {};
  for (const spec of specs) {
    const m = /^([a-z]+)=(.+)$/.exec(spec);
    if (m && isFace(m[1])) out[m[1]] = m[2]!;
    else for (const f of Object.keys(FACES) as Face[]) out[f] ??= spec;
  }
  return out;
}

/** `90s`, `30m`, `24h`, `7d` → milliseconds. */
function duration(s: string): number {
  const m = /^(\d+)(s|m|h|d)$/.exec(s);
  if (!m) throw new Error(`not a duration: ${s} (use e.g. 30m, 24h, 7d)`);
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'];
}

interface PreflightClient extends Sighting {
  ok: boolean;
}

/** The vector clients seen within `sinceMs`, each with whether it already sends `key`. */
async function preflight(key: string, sinceMs: number): Promise<PreflightClient[]> {
  const redis = new Redis(process.env.REDIS_URL ?? DEFAULT_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  try {
    await redis.connect();
    const planned = keyFingerprint(keyDigest(key));
    return (await listSightings(redis, 'vector', sinceMs, process.env.GATEHOUSE_NS ?? '')).map((s) => ({ ...s, ok: s.fingerprint === planned }));
  } catch (e) {
    throw new Error(`cannot read client sightings from Redis (${(e as Error).message}); set REDIS_URL`);
  } finally {
    redis.disconnect();
  }
}

function describeClient(c: PreflightClient): string {
  const sends = c.fingerprint === null ? 'sends no key' : c.ok ? 'sends the planned key' : `sends another key (${c.fingerprint})`;
  return `${c.address}  "${c.userAgent}"  last seen ${c.at}  ${sends}`;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'key-file': { type: 'string', multiple: true },
      generate: { type: 'boolean' },
      'timeout-ms': { type: 'string' },
      force: { type: 'boolean' },
      since: { type: 'string' },
      grace: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [cmd, faceArg] = positionals;
  if (values.help || !cmd) {
    console.log(USAGE);
    return cmd || values.help ? 0 : 2;
  }
  const timeoutMs = Number(values['timeout-ms'] ?? 5000);
  const log = createLogger('gate-cli', process.env.LOG_LEVEL ?? 'warn');
  const bus = await connectBus({ url: process.env.NATS_URL ?? DEFAULT_NATS_URL, name: 'gate-cli', log });
  try {
    const store = await openGateStore(bus);
    switch (cmd) {
      case 'status':
        return await status(store);
      case 'verify':
        return await verify(store, verifyKeyFiles(values['key-file'] ?? []));
      case 'enforce': {
        if (!isFace(faceArg)) throw new Error(`enforce needs a face: ${Object.keys(FACES).join(', ')}`);
        const keyFiles = values['key-file'] ?? [];
        if (keyFiles.length > 1 || Boolean(keyFiles.length) === Boolean(values.generate)) {
          throw new Error('enforce needs exactly one of --key-file FILE or --generate');
        }
        const key = values.generate ? generateKey() : readKeyFile(keyFiles[0]!);
        if (faceArg === 'vector') {
          const lacking = (await preflight(key, duration(values.since ?? '24h'))).filter((c) => !c.ok);
          if (lacking.length && !values.force) {
            err(`enforce vector refused: ${lacking.length} client(s) seen recently do not send this key yet:`);
            for (const c of lacking) err(`  ${describeClient(c)}`);
            err('Give every machine the key first (VECTORDB_API_KEY), check with `scripts/gate preflight vector --key-file FILE`, or use --force.');
            return 1;
          }
          if (lacking.length) err(`--force: enforcing although ${lacking.length} client(s) seen recently do not send this key; they will get 401.`);
        }
        const r = await flipGate(store, faceArg, enforcedState([key], actor()), timeoutMs, bus);
        // The one place a key is ever printed: once, on stdout only, so it can be piped to a file.
        if (values.generate) process.stdout.write(`${key}\n`);
        return reportFlip(faceArg, 'enforced', r);
      }
      case 'preflight': {
        if (faceArg !== 'vector') throw new Error('preflight is for the vector face: scripts/gate preflight vector --key-file FILE');
        const keyFiles = values['key-file'] ?? [];
        if (keyFiles.length !== 1) throw new Error('preflight needs --key-file FILE (the key you plan to enforce)');
        const clients = await preflight(readKeyFile(keyFiles[0]!), duration(values.since ?? '24h'));
        if (!clients.length) console.log(`no client seen in the last ${values.since ?? '24h'}`);
        for (const c of clients) console.log(`${c.ok ? 'ready  ' : 'LACKING'} ${describeClient(c)}`);
        const lacking = clients.filter((c) => !c.ok).length;
        console.log(lacking ? `preflight: ${lacking} of ${clients.length} client(s) do not send the planned key yet` : `preflight: all ${clients.length} client(s) send the planned key`);
        return lacking ? 1 : 0;
      }
      case 'rotate': {
        if (!isFace(faceArg)) throw new Error(`rotate needs a face: ${Object.keys(FACES).join(', ')}`);
        const keyFiles = values['key-file'] ?? [];
        if (keyFiles.length !== 1) throw new Error('rotate needs --key-file FILE (the new key)');
        const current = (await store.get(faceArg))?.state;
        if (current?.state !== 'enforced') throw new Error(`rotate needs an enforced ${faceArg} gate; use enforce first`);
        const key = readKeyFile(keyFiles[0]!);
        const graceMs = duration(values.grace ?? '1h');
        const next = enforcedState([key], actor());
        const previous = acceptedDigests(current).full.filter((d) => d !== keyDigest(key));
        const state = {
          ...next,
          ...(current.readOnlyKeyDigests ? { readOnlyKeyDigests: current.readOnlyKeyDigests } : {}),
          graceKeyDigests: previous,
          graceUntil: new Date(Date.now() + graceMs).toISOString(),
        };
        const r = await flipGate(store, faceArg, state, timeoutMs, bus);
        err(`${faceArg}: the previous key(s) stay accepted until ${state.graceUntil}, then only ${keyFingerprint(keyDigest(key))}`);
        if (faceArg === 'vector') {
          const lacking = (await preflight(key, duration(values.since ?? '24h'))).filter((c) => !c.ok);
          if (lacking.length) err(`${lacking.length} client(s) seen recently do not send the new key yet; they stop working at ${state.graceUntil}`);
        }
        return reportFlip(faceArg, 'rotated', r);
      }
      case 'open': {
        if (!isFace(faceArg)) throw new Error(`open needs a face: ${Object.keys(FACES).join(', ')}`);
        return reportFlip(faceArg, 'open', await flipGate(store, faceArg, openState(actor()), timeoutMs, bus));
      }
      default:
        err(USAGE);
        return 2;
    }
  } finally {
    await bus.nc.drain();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: Error) => {
    err(`gate: ${e.message}`);
    process.exit(1);
  },
);
