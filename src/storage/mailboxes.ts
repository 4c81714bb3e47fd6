/**
 * The mailbox an email address delivers to, for the one-grant-per-mailbox rule: addresses that reach the same inbox
 * count as one. Sign-in keeps the address as typed; only the sign-up grant is keyed by this.
 */
const GMAIL = new Set(['gmail.com', 'googlemail.com']);

/**
 * Lower-case; the `+tag` of the local part dropped (any domain); for Gmail, dots in the local part dropped and
 * googlemail.com read as gmail.com. Expects an address already normalised (`normalizeEmail`).
 */
export function mailboxOf(email: string): string {
  const lower = email.toLowerCase();
  const at = lower.lastIndexOf('@');
  let local = lower.slice(0, at);
  let domain = lower.slice(at + 1);
  const plus = local.indexOf('+');
  if (plus > 0) local = local.slice(0, plus);
  if (GMAIL.has(domain)) {
    domain = 'gmail.com';
    local = local.replaceAll('.', '') || local;
  }
  return `${local}@${domain}`;
}
