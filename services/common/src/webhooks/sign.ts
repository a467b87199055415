import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the signed content is
 * `<webhook-id>.<webhook-timestamp>.<body>`, HMAC-SHA256 with the secret's bytes (base64 after the
 * `whsec_` prefix), sent as `webhook-signature: v1,<base64>` — one entry per secret still valid,
 * space-separated, so a receiver verifies with either side of a rotation.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function signPayload(secret: string | KeyObject, id: string, timestamp: number, body: string): string {
  const key = typeof secret === 'string' ? secretKey(secret) : secret;
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

const secretKey = (secret: string): KeyObject => createSecretKey(Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64'));

export interface StoredSecret {
  secret: string;
  /** epoch seconds after which it no longer signs; null = current. */
  expires_at: number | null;
}

/** Each stored secret's key, decoded once per loaded row rather than once per delivery. */
const keys = new WeakMap<StoredSecret, KeyObject>();

export function signatureHeader(secrets: readonly StoredSecret[], id: string, timestamp: number, body: string, nowSec: number): string {
  return secrets
    .filter((s) => s.expires_at === null || s.expires_at > nowSec)
    .map((s) => {
      let key = keys.get(s);
      if (!key) keys.set(s, (key = secretKey(s.secret)));
      return signPayload(key, id, timestamp, body);
    })
    .join(' ');
}
