import { describe, expect, it } from 'vitest';
import { storeUnavailable } from './worker.ts';

const pgError = (code: string) => Object.assign(new Error(`pg ${code}`), { name: 'PostgresError', code });

describe('storeUnavailable', () => {
  it('answers 503 for a store that is away: sockets, DNS, postgres.js, SQLSTATE 08 and 57P01-05', () => {
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', '08006', '57P01', '57P03', '57P05']) {
      const e = storeUnavailable(Object.assign(new Error('x'), { code }));
      expect(e?.status, code).toBe(503);
      expect(e?.message).toMatch(/cannot reach its database/);
    }
  });

  it('answers 503 for a store out of connections (class 53: too many clients, a role or database CONNECTION LIMIT)', () => {
    for (const code of ['53300', '53000', '53200']) {
      const e = storeUnavailable(pgError(code));
      expect(e?.status, code).toBe(503);
      expect(e?.message).toMatch(/out of connections/);
    }
  });

  it('looks through causes (an error wrapped by a driver or a handler)', () => {
    const wrapped = new Error('query failed', { cause: new Error('inner', { cause: pgError('53300') }) });
    expect(storeUnavailable(wrapped)?.status).toBe(503);
  });

  it('leaves everything else alone: data errors, bugs, non-errors', () => {
    for (const err of [pgError('22P02'), pgError('23505'), pgError('57014'), new TypeError('bug'), 'text', null, undefined, { code: 5300 }]) {
      expect(storeUnavailable(err)).toBeUndefined();
    }
  });
});
