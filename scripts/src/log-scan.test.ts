import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { rememberSecret, scanLog, secretsOfEnv } from './log-scan.ts';

const secret = () => randomBytes(24).toString('base64url');

describe('log scan', () => {
  it('finds the secrets a process was given, and masks them in its report', () => {
    const key = secret();
    const env = { OPENAI_API_KEYS: `${secret()};${key}`, GATE_SESSION_SECRET: secret(), NATS_URL: 'nats://127.0.0.1:4222', LOG_LEVEL: 'info' };
    const named = secretsOfEnv(env);
    expect(named.map(([n]) => n)).toEqual(['OPENAI_API_KEYS', 'OPENAI_API_KEYS', 'GATE_SESSION_SECRET']);
    const { findings } = scanLog(`{"msg":"ok"}\n{"msg":"upstream said no","key":"${key}"}\n`, named);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ kind: 'env:OPENAI_API_KEYS', line: 2 });
    expect(findings[0]!.excerpt).not.toContain(key);
  });

  it('finds the secrets the tests made up', () => {
    const pw = rememberSecret(secret());
    expect(scanLog(`sign-in for ada failed with ${pw}`).findings.map((f) => f.kind)).toEqual(['test-secret']);
  });

  it('finds credentials by their shape, and lets redacted ones and ordinary lines pass', () => {
    const jwt = `eyJhbGciOiJIUzI1NiJ9.eyJpZCI6IjEyMzQ1Njc4OTAifQ.${secret()}`;
    const text = [
      `{"req":{"headers":{"authorization":"Bearer ${secret()}"}}}`,
      `{"token":"${jwt}"}`,
      `{"msg":"key sk-${secret()} refused"}`,
      `{"password":"${secret()}"}`,
      `connecting to postgres://app:${secret()}@db:5432/x`,
      '{"req":{"headers":{"authorization":"[redacted]"}},"password":"[redacted]"}',
      '{"msg":"chat worker serving","subject":"chat.v1.>","id":"6a1f0c2e-3b5d-4e8f-9a7b-1c2d3e4f5a6b"}',
      'postgres://postgres@127.0.0.1:5432/gatehouse_test',
    ].join('\n');
    const kinds = scanLog(text).findings.map((f) => `${f.line}:${f.kind}`);
    expect(kinds).toEqual(['1:bearer', '2:jwt', '3:sk-api-key', '4:secret-field', '5:basic-auth-url']);
  });
});
