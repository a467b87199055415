import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './local-stack.ts';

/**
 * A throwaway OpenLDAP directory for tests (TOOLING.md's recipe): a cn=config written to a temp
 * dir, the base entries and users loaded with slapadd, slapd started in the foreground on loopback
 * ports of its own, groups added over LDAP afterwards so the memberof overlay fills in each user's
 * `memberOf`. Optional LDAPS (a self-signed certificate made with openssl; `caFile` is it) — the
 * plain port answers StartTLS with the same certificate. `stop()` kills it and removes the dir;
 * `down()`/`up()` stop and start the same directory on the same ports (the "server down" case).
 * Passwords are generated here, at run time.
 *
 * Needs slapd and ldap-utils (infra/bringup/ldap.sh installs them).
 */

export interface LdapUser {
  uid: string;
  password: string;
  mail: string;
  cn: string;
}
export interface LdapGroup {
  cn: string;
  members: string[]; // uids
}
export interface SlapdOptions {
  /** `mail: ''` leaves the attribute out. */
  users?: { uid: string; mail?: string; cn?: string; password?: string }[];
  groups?: LdapGroup[];
  tls?: boolean;
}
export interface Slapd {
  host: '127.0.0.1';
  port: number;
  /** The LDAPS port (only with `tls`). */
  tlsPort: number | undefined;
  /** The self-signed certificate slapd presents (only with `tls`): the CA file a client trusts. */
  caFile: string | undefined;
  url: string;
  suffix: string;
  peopleBase: string;
  groupsBase: string;
  /** The application (bind) account: may read people and groups, nothing else. */
  appDn: string;
  appPassword: string;
  users: LdapUser[];
  userDn(uid: string): string;
  groupDn(cn: string): string;
  /** Run ldapmodify as the directory's root with this LDIF (change a password, add a member…). */
  modify(ldif: string): Promise<void>;
  /** Stop slapd, keep the directory (the next `up()` serves the same data on the same ports). */
  down(): Promise<void>;
  up(): Promise<void>;
  stop(): Promise<void>;
}

const exec = promisify(execFile);
const SBIN = (name: string) => (existsSync(`/usr/sbin/${name}`) ? `/usr/sbin/${name}` : name);
const BIN = (name: string) => (existsSync(`/usr/bin/${name}`) ? `/usr/bin/${name}` : name);
const SUFFIX = 'dc=gatehouse,dc=test';

/** RFC 2307's {SSHA}: base64(sha1(password + salt) + salt). */
export function ssha(password: string): string {
  const salt = randomBytes(8);
  const digest = createHash('sha1').update(password).update(salt).digest();
  return `{SSHA}${Buffer.concat([digest, salt]).toString('base64')}`;
}

const secret = () => randomBytes(12).toString('base64url');

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = connect({ host: '127.0.0.1', port });
    c.once('connect', () => (c.destroy(), resolve(true)));
    c.once('error', () => resolve(false));
  });
}

export async function startSlapd(opts: SlapdOptions = {}): Promise<Slapd> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-slapd-'));
  const rootDn = `cn=admin,${SUFFIX}`;
  const rootPassword = secret();
  const appDn = `cn=reader,${SUFFIX}`;
  const appPassword = secret();
  const peopleBase = `ou=people,${SUFFIX}`;
  const groupsBase = `ou=groups,${SUFFIX}`;
  const users: LdapUser[] = (opts.users ?? []).map((u) => ({
    uid: u.uid,
    password: u.password ?? secret(),
    mail: u.mail ?? `${u.uid}@ldap.gatehouse.test`,
    cn: u.cn ?? u.uid,
  }));
  const userDn = (uid: string) => `uid=${uid},${peopleBase}`;
  const groupDn = (cn: string) => `cn=${cn},${groupsBase}`;
  const port = await freePort();
  const tlsPort = opts.tls ? await freePort() : undefined;
  let caFile: string | undefined;
  let tlsConfig = '';
  if (opts.tls) {
    caFile = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    await exec(BIN('openssl'), ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', caFile, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost']);
    tlsConfig = `olcTLSCertificateFile: ${caFile}\nolcTLSCertificateKeyFile: ${key}\n`;
  }

  const config = `dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: ${dir}/slapd.pid
${tlsConfig}
dn: cn=module{0},cn=config
objectClass: olcModuleList
cn: module{0}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb
olcModuleLoad: memberof

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

include: file:///etc/ldap/schema/core.ldif
include: file:///etc/ldap/schema/cosine.ldif
include: file:///etc/ldap/schema/nis.ldif
include: file:///etc/ldap/schema/inetorgperson.ldif

dn: olcDatabase={-1}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {-1}frontend

dn: olcDatabase={0}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {0}config
olcAccess: {0}to * by * none

dn: olcDatabase={1}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {1}mdb
olcSuffix: ${SUFFIX}
olcRootDN: ${rootDn}
olcRootPW: ${ssha(rootPassword)}
olcDbDirectory: ${dir}/data
olcAccess: {0}to attrs=userPassword by anonymous auth by * none
olcAccess: {1}to * by dn.exact="${appDn}" read by self read by * none

dn: olcOverlay={0}memberof,olcDatabase={1}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcMemberOf
olcOverlay: {0}memberof
`;
  const entries = [
    `dn: ${SUFFIX}\nobjectClass: top\nobjectClass: dcObject\nobjectClass: organization\no: Gatehouse test\ndc: gatehouse`,
    `dn: ${peopleBase}\nobjectClass: organizationalUnit\nou: people`,
    `dn: ${groupsBase}\nobjectClass: organizationalUnit\nou: groups`,
    `dn: ${appDn}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: reader\nuserPassword: ${ssha(appPassword)}`,
    ...users.map(
      (u) =>
        `dn: ${userDn(u.uid)}\nobjectClass: inetOrgPerson\nuid: ${u.uid}\ncn: ${u.cn}\nsn: ${u.cn}\n${u.mail ? `mail: ${u.mail}\n` : ''}userPassword: ${ssha(u.password)}`,
    ),
  ];
  await writeFile(join(dir, 'config.ldif'), config);
  await writeFile(join(dir, 'data.ldif'), entries.join('\n\n') + '\n');
  const { mkdir } = await import('node:fs/promises');
  await mkdir(join(dir, 'slapd.d'));
  await mkdir(join(dir, 'data'));
  try {
    await exec(SBIN('slapadd'), ['-q', '-n', '0', '-F', join(dir, 'slapd.d'), '-l', join(dir, 'config.ldif')]);
    await exec(SBIN('slapadd'), ['-q', '-n', '1', '-F', join(dir, 'slapd.d'), '-l', join(dir, 'data.ldif')]);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`slapadd failed (is slapd installed? run infra/bringup/ensure-infra.sh): ${(err as { stderr?: string }).stderr ?? String(err)}`);
  }

  const urls = [`ldap://127.0.0.1:${port}/`, ...(tlsPort ? [`ldaps://127.0.0.1:${tlsPort}/`] : [])].join(' ');
  let proc: ChildProcess | undefined;
  let stderr = '';

  async function up(): Promise<void> {
    if (proc) return;
    stderr = '';
    const p = spawn(SBIN('slapd'), ['-F', join(dir, 'slapd.d'), '-h', urls, '-d', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    p.stderr!.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
    proc = p;
    // Bounded: 200 × 25 ms.
    for (let i = 0; i < 200; i++) {
      if (p.exitCode !== null) break;
      if ((await accepts(port)) && (!tlsPort || (await accepts(tlsPort)))) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    await down();
    throw new Error(`slapd did not start on 127.0.0.1:${port}: ${stderr}`);
  }

  async function down(): Promise<void> {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
    p.kill('SIGTERM');
    const timer = setTimeout(() => p.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }

  async function modify(ldif: string): Promise<void> {
    const child = execFile(BIN('ldapmodify'), ['-x', '-H', `ldap://127.0.0.1:${port}/`, '-D', rootDn, '-w', rootPassword]);
    const done = new Promise<void>((resolve, reject) => {
      let err = '';
      child.stderr?.on('data', (b: Buffer) => (err += b.toString()));
      child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ldapmodify exited ${code}: ${err}`))));
    });
    child.stdin!.end(ldif);
    await done;
  }

  await up();
  try {
    // Groups over LDAP, so the memberof overlay writes memberOf on each member.
    for (const g of opts.groups ?? []) {
      const members = g.members.length ? g.members.map((m) => `member: ${userDn(m)}`) : [`member: ${appDn}`];
      await modify(`dn: ${groupDn(g.cn)}\nchangetype: add\nobjectClass: groupOfNames\ncn: ${g.cn}\n${members.join('\n')}\n`);
    }
  } catch (err) {
    await down();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }

  return {
    host: '127.0.0.1',
    port,
    tlsPort,
    caFile,
    url: `ldap://127.0.0.1:${port}`,
    suffix: SUFFIX,
    peopleBase,
    groupsBase,
    appDn,
    appPassword,
    users,
    userDn,
    groupDn,
    modify,
    down,
    up,
    async stop() {
      await down();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
