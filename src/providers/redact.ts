/**
 * Upstream text made safe to show: an upstream (or a proxy in front of it) may echo the request's headers, and
 * network errors name internal addresses. `redactCredentials` is for the server log; `redactForClient` also hides
 * where tollgate's upstreams live.
 */
import { isIPv6 } from 'node:net';

const HIDDEN = '[redacted]';
const ADDRESS = '[address]';
/** The longest upstream text a client is shown. */
const MAX_CLIENT_TEXT = 1000;

const CREDENTIALS: Array<[RegExp, string]> = [
  // The user and password of a URL
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi, '$1'],
  // Header or field echoes: `Authorization: Bearer x`, `"x-api-key":"x"`, `api_key=x`
  [
    /\b((?:proxy-)?authorization|x-api-key|x-goog-api-key|api[-_]?key|access[-_]?token)(["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token)\s+)?[^\s"',;&}]+/gi,
    `$1$2${HIDDEN}`,
  ],
  // A scheme and a token (a token has a digit or base64 padding: "bearer authentication" is prose)
  [/\b(bearer|basic)\s+(?=[A-Za-z0-9._~+/=-]*[0-9=])[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${HIDDEN}`],
  // Query parameters that carry keys: `?key=...` (Gemini), `&token=...`, `&sig=...`
  [/([?&](?:key|api_key|apikey|token|access_token|sig|signature)=)[^&\s"']+/gi, `$1${HIDDEN}`],
  // Key shapes: OpenAI/Anthropic `sk-...`, Google `AIza...`, tollgate `tg-live-...`, GitHub/Slack/AWS tokens
  [/\b(?:sk|rk|pk)-[A-Za-z0-9_-]{8,}/g, HIDDEN],
  [/\bAIza[0-9A-Za-z_-]{20,}/g, HIDDEN],
  [/\b[a-z]{2,8}-(?:live|test)-[0-9A-Za-z]{16,}/g, HIDDEN],
  [/\b(?:gh[pousr]_|xox[abpr]-|AKIA)[A-Za-z0-9-]{12,}/g, HIDDEN],
  // Anything else long and random-looking (letters and digits mixed, 32+ characters)
  [/\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}\b/g, HIDDEN],
];

/** Host names that only mean something inside a network. */
const INTERNAL_HOST =
  /^(?:localhost|[^.]+|.+\.(?:internal|local|localdomain|localhost|lan|home|corp|intranet|private|svc|cluster\.local))$/i;

const ADDRESSES: Array<[RegExp, (match: string) => string]> = [
  // The host of a URL naming an internal host or an IP literal
  [/\b[a-z][a-z0-9+.-]*:\/\/(?:\[[^\]]*\]|[^\s/?#:"']+)(?::\d+)?/gi, (match) => internalUrlHost(match)],
  // IPv6 (IPv4-mapped included), bracketed or not, with or without a port
  [
    /(?<![\w.:])\[?[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.%]*\]?(?::\d{1,5})?(?![\w:])/g,
    (match) => (isIPv6(match.replace(/^\[|\](?::\d+)?$/g, '')) ? ADDRESS : match),
  ],
  // IPv4, with or without a port
  [/\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b/g, () => ADDRESS],
  // host:port of a dotted name or localhost
  [/\b(?:localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)+):\d{1,5}\b/gi, () => ADDRESS],
];

export function redactCredentials(text: string): string {
  return CREDENTIALS.reduce((out, [pattern, replacement]) => out.replace(pattern, replacement), text);
}

/** Credentials and addresses removed, cut to a readable length: upstream text a client may see. */
export function redactForClient(text: string): string {
  let out = redactCredentials(text);
  for (const [pattern, replacement] of ADDRESSES) out = out.replace(pattern, replacement);
  return out.length > MAX_CLIENT_TEXT ? `${out.slice(0, MAX_CLIENT_TEXT)}…` : out;
}

function internalUrlHost(url: string): string {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)(\[[^\]]*\]|[^\s/?#:"']+)(:\d+)?$/i.exec(url)!;
  const host = match[2]!.replace(/^\[|\]$/g, '');
  const internal = INTERNAL_HOST.test(host) || /^[\d.]+$/.test(host) || isIPv6(host);
  return internal ? `${match[1]}${ADDRESS}` : url;
}
