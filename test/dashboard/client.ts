import { Agent, fetch as undiciFetch } from 'undici';

/** A browser stand-in for the dashboard's JSON API: keeps cookies, sends the CSRF token like the page does. */
export class DashboardClient {
  readonly cookies = new Map<string, string>();
  csrf = '';
  lastSetCookie: string[] = [];

  constructor(
    readonly base: string,
    private readonly origin = base,
    /** Connects from this loopback address (e.g. 127.0.0.2): another client IP. */
    private readonly localAddress?: string,
  ) {}

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const send = this.localAddress ? fromAddress(this.localAddress) : fetch;
    const response = await send(`${this.base}/dashboard/api${path}`, {
      method,
      headers: {
        ...(this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {}),
        ...(method !== 'GET' ? { origin: this.origin, 'x-csrf-token': this.csrf } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    this.lastSetCookie = response.headers.getSetCookie();
    for (const line of this.lastSetCookie) {
      const [pair, ...attributes] = line.split(';');
      const [name, value] = [pair!.slice(0, pair!.indexOf('=')), pair!.slice(pair!.indexOf('=') + 1)];
      if (attributes.some((a) => /max-age=0/i.test(a.trim()))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await response.text();
    const json = text ? JSON.parse(text) : undefined;
    if (json?.csrf_token) this.csrf = json.csrf_token;
    return { status: response.status, body: json, headers: response.headers };
  }

  /** GET /session (the anonymous CSRF token), then sign up. */
  async signUp(email: string, password = 'correct horse battery') {
    await this.request('GET', '/session');
    return this.request('POST', '/signup', { email, password });
  }

  async signIn(email: string, password: string) {
    await this.request('GET', '/session');
    return this.request('POST', '/signin', { email, password });
  }
}

export const uniqueEmail = (tag: string) =>
  `${tag}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;

/** `fetch` over connections from another loopback address, so the gateway sees another client IP. */
export function fromAddress(localAddress: string): typeof fetch {
  const dispatcher = new Agent({ localAddress });
  return ((url: string, init: RequestInit = {}) =>
    undiciFetch(url, { ...(init as object), dispatcher })) as unknown as typeof fetch;
}
