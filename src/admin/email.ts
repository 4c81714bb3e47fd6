/**
 * One spelling per mailbox, so look-alike spellings cannot open a second account: NFKC (full-width and other
 * compatibility forms fold to ASCII), trimmed, lower-case, the domain without its trailing dot and in its ASCII
 * (punycode) form. Invisible and control characters are refused rather than removed: nobody types them.
 */
import { domainToASCII } from 'node:url';
import { invalidRequest } from '../errors/index.js';

/** Format and control characters (zero-width spaces and joiners, bidi overrides, soft hyphen…), line breaks. */
const INVISIBLE = /[\p{Cf}\p{Cc}\p{Zl}\p{Zp}]/u;
const MAX_LENGTH = 254;

export function normalizeEmail(raw: unknown, param = 'email'): string {
  const refuse = (why: string) => invalidRequest(`email ${why}`, param);
  if (typeof raw !== 'string') throw refuse('must be an email address');
  if (INVISIBLE.test(raw)) throw refuse('must not contain invisible or control characters');
  const folded = raw.normalize('NFKC').trim().toLowerCase();
  if (INVISIBLE.test(folded) || /\s/u.test(folded)) throw refuse('must not contain spaces or invisible characters');
  const at = folded.lastIndexOf('@');
  const local = folded.slice(0, at);
  const domain = folded.slice(at + 1).replace(/\.+$/, '');
  if (at < 1 || local.includes('@') || !domain) throw refuse('must be an email address');
  const asciiDomain = domainToASCII(domain);
  if (!asciiDomain || asciiDomain.startsWith('.')) throw refuse('must be an email address with a valid domain');
  const email = `${local}@${asciiDomain}`;
  if (email.length > MAX_LENGTH) throw refuse(`must have at most ${MAX_LENGTH} characters`);
  return email;
}
