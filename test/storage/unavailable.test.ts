import { describe, expect, it } from 'vitest';
import { isStorageUnavailable } from '../../src/storage/index.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isStorageUnavailable', () => {
  it('recognises connection failures of PostgreSQL and SQLite', () => {
    for (const error of [
      withCode('ECONNREFUSED'),
      withCode('08006'),
      withCode('57P01'),
      withCode('SQLITE_BUSY'),
      withCode('SQLITE_IOERR_WRITE'),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      new Error('Query read timeout'),
      new AggregateError([withCode('ECONNREFUSED')]),
      new Error('wrapped', { cause: withCode('ECONNRESET') }),
    ]) {
      expect(isStorageUnavailable(error), String(error)).toBe(true);
    }
  });

  it('leaves bugs and bad queries alone', () => {
    for (const error of [
      withCode('23505'),
      withCode('42P01'),
      withCode('SQLITE_CONSTRAINT_UNIQUE'),
      new TypeError('x is undefined'),
      'ECONNREFUSED',
      undefined,
    ]) {
      expect(isStorageUnavailable(error), String(error)).toBe(false);
    }
  });
});
