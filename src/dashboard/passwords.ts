/** Password hashing with node's scrypt: `scrypt$N$r$p$salt$hash`, salt and hash in base64url. */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const N = 1 << 15;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
/** 128 * N * r bytes = 32 MiB per hash, above node's 32 MiB default ceiling. */
const MAX_MEMORY = 64 * 1024 * 1024;

export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256;
const DISTINCT_MIN = 5;

/**
 * The commonest passwords of twelve characters or more, and the roots that most long guessable passwords are built
 * from: a password that is one of these, or only one of these repeated or with digits and punctuation around it, is
 * refused. A length rule plus this short list keeps the bundle small; a full estimator would add megabytes.
 */
const COMMON = new Set([
  'password',
  'passw0rd',
  'p@ssw0rd',
  'p@ssword',
  'qwerty',
  'qwertyuiop',
  'asdfghjkl',
  'zxcvbnm',
  'qwertyuiopasdfghjkl',
  'qwertzuiop',
  'azertyuiop',
  '1q2w3e4r5t6y',
  '1qaz2wsx3edc',
  'abcdefghijkl',
  'abcdefghijklmnop',
  'abcdefghijklmnopqrstuvwxyz',
  'abc123',
  'iloveyou',
  'letmein',
  'welcome',
  'admin',
  'administrator',
  'monkey',
  'dragon',
  'football',
  'baseball',
  'sunshine',
  'princess',
  'starwars',
  'trustno1',
  'whatever',
  'superman',
  'batman',
  'master',
  'shadow',
  'michael',
  'jennifer',
  'computer',
  'internet',
  'changeme',
  'secret',
  'default',
  'tollgate',
  'correcthorsebatterystaple',
]);

const SEQUENCES = [
  'abcdefghijklmnopqrstuvwxyz',
  'qwertyuiopasdfghjklzxcvbnm',
  'qwertzuiopasdfghjklyxcvbnm',
  'azertyuiopqsdfghjklmwxcvbn',
  '01234567890',
];
const ADVICE = 'for example a few unrelated words';

/** Why the password is too weak for a new account, or undefined when it will do. */
export function passwordWeakness(password: string): string | undefined {
  const lower = password.normalize('NFKC').toLowerCase();
  if ([...lower].length < PASSWORD_MIN) return `password must have at least ${PASSWORD_MIN} characters`;
  const compact = lower.replace(/\s/gu, '');
  if (new Set(compact).size < DISTINCT_MIN)
    return `password needs at least ${DISTINCT_MIN} different characters, ${ADVICE}`;
  if (/^\d+$/.test(compact)) return `password must not be only digits, ${ADVICE}`;
  // "password1234", "Password!", "qwertyqwerty": a common root, repeated or with digits and punctuation around it.
  const root = compact.replace(/[^\p{L}]/gu, '').replace(/^(.+?)\1+$/u, '$1');
  if (COMMON.has(root)) return `password is one of the most common passwords; choose another, ${ADVICE}`;
  if (isSequence(compact)) return `password is a keyboard or alphabet sequence; choose another, ${ADVICE}`;
  return undefined;
}

/** Every character repeats the one before it or follows it in a common sequence (abcd…, qwer…, 1234…). */
function isSequence(text: string): boolean {
  const chars = [...text];
  return SEQUENCES.some((sequence) =>
    chars.every(
      (c, i) =>
        i === 0 ||
        c === chars[i - 1] ||
        (sequence.includes(c) && sequence.indexOf(c) === sequence.indexOf(chars[i - 1]!) + 1),
    ),
  );
}

function derive(password: string, salt: Buffer, options: ScryptOptions & { N: number }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, { ...options, maxmem: MAX_MEMORY }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, { N, r: R, p: P });
  return ['scrypt', N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

let dummy: Promise<string> | undefined;

/** Spends the time of one verification, so an unknown email answers no faster than a wrong password. */
export async function verifyNothing(password: string): Promise<false> {
  dummy ??= hashPassword('not a password of anyone');
  await verifyPassword(password, await dummy);
  return false;
}
