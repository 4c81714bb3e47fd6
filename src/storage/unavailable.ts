/** Telling a database that is down apart from a query that is wrong. */

/**
 * True when an error means the database cannot be reached or cannot serve right now (a 503 that will pass),
 * unlike a bug or a bad query (a 500). Looks through `cause` chains and AggregateErrors.
 */
export function isStorageUnavailable(error: unknown): boolean {
  return unavailable(error, 0);
}

/** A driver error's `code` (a SQLSTATE, a SQLite or a Node code), if it has one. */
export function errorCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
}

function unavailable(error: unknown, depth: number): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  const { code, message, cause, errors }: { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown } =
    error;
  if (typeof code === 'string' && UNAVAILABLE_CODE.test(code)) return true;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message)) return true;
  if (Array.isArray(errors) && errors.some((e) => unavailable(e, depth + 1))) return true;
  return unavailable(cause, depth + 1);
}

/**
 * Node socket errors; PostgreSQL SQLSTATE class 08 (connection exception), 57P01-57P03 (shutdown, cannot
 * connect now) and 53300 (too many connections); SQLite busy, locked and I/O failures.
 */
const UNAVAILABLE_CODE =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|08[0-9A-Z]{3}|57P0[123]|53300|SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|FULL|PROTOCOL)(_[A-Z_]+)?)$/;
/** pg and pg-pool raise these: plain Errors without a code. */
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error and is not queryable)/;
