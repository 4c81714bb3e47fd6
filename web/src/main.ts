import { html, render } from 'lit-html';
import { api, setCsrfToken, whenSignedOut, type ApiKey, type SessionInfo } from './api.js';
import type { App, Page } from './app.js';
import { auditPage } from './pages/audit.js';
import { authPage } from './pages/auth.js';
import { creditsPage } from './pages/credits.js';
import { invitePage } from './pages/invite.js';
import { keysPage } from './pages/keys.js';
import { membersPage } from './pages/members.js';
import { modelsPage } from './pages/models.js';
import { requestPage } from './pages/request.js';
import { verifyPage } from './pages/verify.js';
import { webhooksPage } from './pages/webhooks.js';

const BASE = '/dashboard';
interface Route {
  title: string;
  page: Page;
  public?: boolean;
  /** Open signed in or out (an invitation link). */
  any?: boolean;
  /** The main navigation's entry this page belongs under, when not its own path. */
  nav?: string;
}
const PAGES: Record<string, Route> = {
  '/signin': { title: 'Sign in', page: authPage('signin'), public: true },
  '/signup': { title: 'Create your account', page: authPage('signup'), public: true },
  '/verify': { title: 'Confirm your email', page: verifyPage, public: true },
  '/keys': { title: 'API Keys', page: keysPage },
  '/credits': { title: 'Credits & usage', page: creditsPage },
  '/models': { title: 'Models', page: modelsPage },
  '/webhooks': { title: 'Webhooks', page: webhooksPage },
  '/members': { title: 'Members', page: membersPage },
  '/audit': { title: 'Audit log', page: auditPage },
  '/invite': { title: 'Join an account', page: invitePage, any: true },
};
/** Each entry with the capability it needs (src/auth/roles.ts); the nav shows what the role may use. */
const NAV = [
  ['/keys', 'API Keys', 'own_keys'],
  ['/credits', 'Credits & usage', 'usage'],
  ['/models', 'Models', 'usage'],
  ['/webhooks', 'Webhooks', 'webhooks'],
  ['/members', 'Members', 'members'],
  ['/audit', 'Audit log', 'audit'],
] as const;
const allowed = (capability: string) => app.session.capabilities?.includes(capability) ?? true;
/** The first page the role may use (a billing member has no keys page). */
const home = () => NAV.find(([, , need]) => allowed(need))?.[0] ?? '/members';

/** Points the session at another of the user's accounts and redraws the page with its data. */
async function switchAccount(accountId: string): Promise<void> {
  await api('POST', '/session/account', { account_id: accountId });
  await refreshSession();
  show();
}

const root = document.getElementById('app')!;
let leave: (() => void) | void;
let firstKey: ApiKey | undefined;

const app: App = {
  session: { signed_in: false, csrf_token: '', signup_enabled: false },
  navigate(path) {
    history.pushState(null, '', BASE + path);
    show();
  },
  signedIn(session, key) {
    app.session = session;
    setCsrfToken(session.csrf_token);
    firstKey = key;
    // The full session (role, capabilities, accounts) before the shell is drawn.
    void refreshSession().finally(() => app.navigate(home()));
  },
  takeFirstKey() {
    const key = firstKey;
    firstKey = undefined;
    return key;
  },
};

async function signOut(): Promise<void> {
  await api('POST', '/signout').catch(() => undefined);
  await refreshSession();
  app.navigate('/signin');
}

async function refreshSession(): Promise<void> {
  app.session = await api<SessionInfo>('GET', '/session');
  setCsrfToken(app.session.csrf_token);
}

function currentPath(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length).replace(/\/$/, '') : '';
  return path || home();
}

/** A fixed page, or one request's detail (`/requests/<id>`, the id URL-encoded). */
function routeOf(path: string): Route | undefined {
  const request = /^\/requests\/([^/]+)$/.exec(path);
  if (!request) return PAGES[path];
  try {
    return { title: 'Request', page: requestPage(decodeURIComponent(request[1]!)), nav: '/credits' };
  } catch {
    return undefined; // not valid percent-encoding
  }
}

function show(): void {
  let path = currentPath();
  let route = routeOf(path);
  if (!route) {
    path = home();
    route = PAGES[path]!;
  }
  if (!route.any && !route.public && !app.session.signed_in) return app.navigate('/signin');
  if (!route.any && route.public && app.session.signed_in) return app.navigate(home());
  leave?.();
  document.title = `${route.title} · tollgate`;
  render(shell(route.nav ?? path), root);
  const main = document.getElementById('page')!;
  leave = route.page(main, app);
  main.focus({ preventScroll: true });
}

function shell(path: string) {
  const link = (to: string, label: string) =>
    html`<a href=${BASE + to} class=${to === path ? 'active' : ''} aria-current=${to === path ? 'page' : 'false'}
      >${label}</a
    >`;
  return html`
    <header class="topbar">
      <a class="brand" href=${BASE + '/keys'}>tollgate</a>
      ${
        app.session.signed_in
          ? html`<nav aria-label="Main">
                ${NAV.filter(([, , need]) => allowed(need)).map(([to, label]) => link(to, label))}
              </nav>
              <div class="user">
                ${
                  (app.session.accounts?.length ?? 0) > 1
                    ? html`<select
                        aria-label="Account"
                        @change=${(e: Event) => void switchAccount((e.target as HTMLSelectElement).value)}
                      >
                        ${app.session.accounts!.map(
                          (a) =>
                            html`<option value=${a.account_id} ?selected=${a.account_id === app.session.account_id}>
                              ${a.email} (${a.role})
                            </option>`,
                        )}
                      </select>`
                    : null
                }
                <span class="email" title=${app.session.email ?? ''}>${app.session.email}</span>
                <button type="button" class="secondary small" @click=${signOut}>Sign out</button>
              </div>`
          : null
      }
    </header>
    <main id="page" tabindex="-1"></main>
  `;
}

// In-app links navigate without reloading the page.
document.addEventListener('click', (event) => {
  const anchor = (event.target as Element).closest?.('a');
  if (
    !anchor ||
    anchor.target ||
    anchor.hasAttribute('download') ||
    event.metaKey ||
    event.ctrlKey ||
    event.shiftKey ||
    event.button !== 0
  )
    return;
  const url = new URL(anchor.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE + '/')) return;
  event.preventDefault();
  app.navigate(url.pathname.slice(BASE.length));
});
window.addEventListener('popstate', show);
whenSignedOut(() => {
  app.session = { ...app.session, signed_in: false };
  void refreshSession().then(() => app.navigate('/signin'));
});

// lit-html renders next to existing children: drop the static "Loading…" of index.html first.
root.replaceChildren();
refreshSession().then(show, (error: Error) => {
  render(html`<p class="error" role="alert">The dashboard could not reach the gateway: ${error.message}</p>`, root);
});
